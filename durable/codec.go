package durable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// A BlobStore keeps the payloads too large for Temporal, by a key that is
// the SHA-256 of their content. Every worker and client of a task queue
// must reach the same store.
type BlobStore interface {
	Put(ctx context.Context, key string, data []byte) error
	Get(ctx context.Context, key string) ([]byte, error)
}

// DirStore is a [BlobStore] in a directory, such as one on a file system
// every worker mounts.
type DirStore string

// Put writes data under key, atomically, so that a reader never sees part
// of it.
func (d DirStore) Put(_ context.Context, key string, data []byte) error {
	path := filepath.Join(string(d), key)
	if _, err := os.Stat(path); err == nil {
		return nil // content-addressed: already there
	}
	f, err := os.CreateTemp(string(d), ".blob*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		os.Remove(f.Name())
	}
	return werr
}

// Get reads the data under key.
func (d DirStore) Get(_ context.Context, key string) ([]byte, error) {
	return os.ReadFile(filepath.Join(string(d), key))
}

// BlobThreshold is the encoded size above which [DataConverter] moves a
// payload into its BlobStore: well under Temporal's 2 MB limit, and small
// enough that a workflow history of many such references stays small.
const BlobThreshold = 256 << 10

// blobEncoding marks a payload that is a reference into a BlobStore.
const blobEncoding = "agentloop/blob-sha256"

// DataConverter returns the data converter of durable runs: JSON,
// compressed with zlib, and, when store is not nil, any payload still over
// [BlobThreshold] moved into store, leaving only its key in the workflow
// history. Give the same converter to the workers' and the callers'
// client.Options.
func DataConverter(store BlobStore) converter.DataConverter {
	codecs := []converter.PayloadCodec{}
	if store != nil {
		codecs = append(codecs, blobCodec{store})
	}
	// The last codec encodes first: compress, then move what is still big.
	codecs = append(codecs, converter.NewZlibCodec(converter.ZlibCodecOptions{}))
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), codecs...)
}

// blobCodec moves large payloads into a BlobStore.
type blobCodec struct{ store BlobStore }

func (c blobCodec) Encode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		if proto.Size(p) <= BlobThreshold {
			out[i] = p
			continue
		}
		b, err := proto.Marshal(p)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		key := hex.EncodeToString(sum[:])
		if err := c.store.Put(context.Background(), key, b); err != nil {
			return nil, fmt.Errorf("durable: storing a %d-byte payload: %w", len(b), err)
		}
		out[i] = &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(blobEncoding)}, Data: []byte(key)}
	}
	return out, nil
}

func (c blobCodec) Decode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		if string(p.Metadata[converter.MetadataEncoding]) != blobEncoding {
			out[i] = p
			continue
		}
		key := string(p.Data)
		b, err := c.store.Get(context.Background(), key)
		if err != nil {
			return nil, fmt.Errorf("durable: reading payload %s: %w", key, err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != key {
			return nil, errors.New("durable: payload " + key + " is corrupted")
		}
		var q commonpb.Payload
		if err := proto.Unmarshal(b, &q); err != nil {
			return nil, err
		}
		out[i] = &q
	}
	return out, nil
}
