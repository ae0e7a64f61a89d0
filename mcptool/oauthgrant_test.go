package mcptool

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
)

// TestSignJWT checks the client assertions of private_key_jwt: a JWS that
// the public key verifies, ES256 for a P-256 key (r and s as 32 bytes
// each) and RS256 for an RSA key, read from PKCS #8 PEM.
func TestSignJWT(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rs, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, key := range []crypto.Signer{ec, rs} {
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := parsePrivateKey(string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})))
		if err != nil {
			t.Fatal(err)
		}
		jwt, err := signJWT(parsed, map[string]any{"iss": "me", "sub": "me", "aud": "https://as"}, "")
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(jwt, ".")
		if len(parts) != 3 {
			t.Fatalf("%d parts", len(parts))
		}
		var header struct{ Alg, Typ string }
		hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
		json.Unmarshal(hb, &header)
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
		switch k := key.(type) {
		case *ecdsa.PrivateKey:
			r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
			if header.Alg != "ES256" || len(sig) != 64 || !ecdsa.Verify(&k.PublicKey, digest[:], r, s) {
				t.Errorf("ES256: header %+v, %d-byte signature does not verify", header, len(sig))
			}
		case *rsa.PrivateKey:
			if header.Alg != "RS256" || rsa.VerifyPKCS1v15(&k.PublicKey, crypto.SHA256, digest[:], sig) != nil {
				t.Errorf("RS256: header %+v, signature does not verify", header)
			}
		}
	}
	if _, err := parsePrivateKey("not a key"); err == nil {
		t.Error("parsePrivateKey accepted text that is not PEM")
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if _, err := signJWT(p384, map[string]any{}, ""); err == nil {
		t.Error("signJWT accepted a P-384 key for ES256")
	}
}
