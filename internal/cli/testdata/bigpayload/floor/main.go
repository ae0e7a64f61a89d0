// Command floor is the floor client of internal/cli's big-payload
// benchmarks: it moves the bytes agentloop moves and does nothing else. It
// posts a small request and reads the whole stream; if that was a big
// answer, it posts a body of -body bytes and reads that stream too.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	url := flag.String("url", "", "the fake API's base URL")
	size := flag.Int("body", 0, "the size of the second request's body")
	flag.Parse()
	if err := run(*url, *size); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(url string, size int) error {
	first := []byte(`{"model":"m","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	n, err := post(url, first)
	if err != nil || n < 1<<20 {
		return err // a short answer (the long-text script) ends here
	}
	body := bytes.Repeat([]byte{' '}, size)
	copy(body, first)
	_, err = post(url, body)
	return err
}

// post sends body and reads the whole answer, returning its length.
func post(url string, body []byte) (int64, error) {
	req, err := http.NewRequest("POST", url+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return io.Copy(io.Discard, resp.Body)
}
