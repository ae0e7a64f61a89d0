// Command floor is the floor client of internal/cli's big-payload
// benchmarks: it moves the bytes agentloop moves and does nothing else. It
// posts a small request and reads the whole stream; if that asked for a
// tool, it posts a body of -body bytes and reads that stream too.
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
	tail, err := post(url, first)
	if err != nil || !bytes.Contains(tail, []byte(`"stop_reason":"tool_use"`)) {
		return err // an answer without a tool call (the long-text script) ends here
	}
	body := bytes.Repeat([]byte{' '}, size)
	copy(body, first)
	_, err = post(url, body)
	return err
}

// post sends body and reads the whole answer, returning its end, where
// message_delta gives the stop reason.
func post(url string, body []byte) ([]byte, error) {
	req, err := http.NewRequest("POST", url+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var t tail
	_, err = io.Copy(&t, resp.Body)
	return t.b, err
}

// tail keeps the last 512 bytes written to it.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p[max(0, len(p)-512):]...)
	t.b = t.b[max(0, len(t.b)-512):]
	return len(p), nil
}
