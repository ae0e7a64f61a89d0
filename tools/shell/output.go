package shell

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentloop/agentloop/llm"
)

// headTail keeps the first and last bytes written to it, up to max in all,
// so that a command's output takes bounded memory however long it is.
type headTail struct {
	max   int
	head  []byte
	tail  []byte // a ring of max - max/2 bytes once full
	next  int    // where the ring's next byte goes
	total int64
}

func newHeadTail(max int) *headTail { return &headTail{max: max} }

func (h *headTail) Write(p []byte) (int, error) {
	n := len(p)
	h.total += int64(n)
	if room := h.max/2 - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	size := h.max - h.max/2
	for len(p) > 0 {
		if len(h.tail) < size {
			k := min(size-len(h.tail), len(p))
			h.tail = append(h.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(h.tail[h.next:], p)
		h.next = (h.next + k) % size
		p = p[k:]
	}
	return n, nil
}

// Len returns how many bytes were written.
func (h *headTail) Len() int64 { return h.total }

// String returns the output, its middle replaced by a note if it was cut.
func (h *headTail) String() string {
	tail := append(append([]byte(nil), h.tail[h.next:]...), h.tail[:h.next]...)
	if h.total <= int64(h.max) {
		return strings.ToValidUTF8(string(h.head)+string(tail), "\uFFFD")
	}
	head := h.head
	// Cut on character boundaries.
	for len(head) > 0 && !utf8.FullRune(head[lastStart(head):]) {
		head = head[:lastStart(head)]
	}
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	cut := h.total - int64(len(head)) - int64(len(tail))
	return strings.ToValidUTF8(fmt.Sprintf("%s\n[… %d bytes of output cut here …]\n%s", head, cut, tail), "\uFFFD")
}

// lastStart returns the index of the last rune start in b.
func lastStart(b []byte) int {
	i := len(b) - 1
	for i > 0 && !utf8.RuneStart(b[i]) {
		i--
	}
	return max(i, 0)
}

func textBlock(s string) []llm.Block { return []llm.Block{llm.Text{Text: s}} }
