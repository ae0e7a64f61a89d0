package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/anthropictest"
)

// The big-payload benchmarks time what a user waits for when a tool input
// is large, as a file-writing tool's is: the model streams a 5 MiB input
// in 512-byte fragments (10,240 input_json_delta events), the tool runs,
// and the next request echoes the input back whole. Each client is its own
// binary, built once per run and started once per round trip, so that its
// time and peak RSS are its own:
//
//   - floor (testdata/bigpayload/floor): only moves the same bytes. It
//     reads the stream and posts a body of the size agentloop's second
//     request had, then reads the answer. Nothing can be faster.
//   - sdk (testdata/bigpayload/sdk): an agent written with the official
//     SDK alone: NewStreaming, Message.Accumulate, json.Unmarshal of the
//     input, ToParam, and the next NewStreaming.
//   - agentloop: the CLI itself, `agentloop --tools calculator PROMPT`.
//
// The server is anthropictest in this process, Buffered (not one flush per
// event), so that it costs the clients as little as it can.
//
//	go test ./internal/cli -run '^$' -bench 'BigPayload$|LongText$|ShortAnswer|AtRest' -benchtime 5x
//
// BenchmarkBigPayloadUnsaved and BenchmarkLongTextUnsaved run the CLI alone
// without saving its session, to tell the save's share of the peak.
//
// With AGENTLOOP_BENCH_BASELINE set to another agentloop binary, that one
// runs too, as agentloop-baseline.
//
// ns/op is one whole round trip, process start included (a few
// milliseconds for each client); peak-RSS-MiB is the largest maximum
// resident set of the client over the runs, as GNU time reports it.
// BenchmarkBigPayloadInProcess and BenchmarkLongTextInProcess run the CLI
// in this process, for -cpuprofile and -memprofile.

// bigInput is the tool input: the calculator's three fields and a 5 MiB
// "content" string with quotes, tabs, newlines and non-ASCII text, as a
// file's text is.
func bigInput() string {
	var in strings.Builder
	in.WriteString(`{"a":1,"b":2,"operation":"add","content":"`)
	for in.Len() < 5<<20 {
		in.WriteString(`line with \"quotes\" and a tab\t and é\n`)
	}
	in.WriteString(`"}`)
	return in.String()
}

// bigPayloadReplies returns the two answers of the round trip: the tool
// call, then a short final answer.
func bigPayloadReplies(input string) []anthropictest.Reply {
	return []anthropictest.Reply{
		anthropictest.NewStream().ToolUse("toolu_big", "calculator", anthropictest.Split(input, 512)...).Stop("tool_use"),
		anthropictest.NewStream().Text("Written.").Stop("end_turn"),
	}
}

// longTextReplies returns one answer of 100,000 text deltas.
func longTextReplies() []anthropictest.Reply {
	d := make([]string, 100_000)
	for i := range d {
		d[i] = "word "
	}
	return []anthropictest.Reply{anthropictest.NewStream().Text(d...).Stop("end_turn")}
}

// newBenchServer starts a Buffered server answering replies, one request
// each.
func newBenchServer(replies []anthropictest.Reply) *anthropictest.Server {
	srv := anthropictest.NewServer(replies...)
	srv.Buffered = true
	return srv
}

// child is one client: a binary and its arguments for a server URL and
// the size of the body agentloop sent last.
type child struct {
	name string
	args func(url string, bodySize int) []string
	bin  string // the binary, if not the one built as name
}

var (
	floorChild = child{name: "floor", args: func(url string, n int) []string { return []string{"-url", url, "-body", strconv.Itoa(n)} }}
	sdkChild   = child{name: "sdk", args: func(url string, _ int) []string { return []string{"-url", url} }}
)

// cliChildren returns the CLI run with args, preceded by the binary that
// AGENTLOOP_BENCH_BASELINE names, if set, as agentloop-baseline: an earlier
// build to compare with in the same run.
func cliChildren(args ...string) []child {
	c := child{name: "agentloop", args: func(string, int) []string { return args }}
	if bin := os.Getenv("AGENTLOOP_BENCH_BASELINE"); bin != "" {
		return []child{{"agentloop-baseline", c.args, bin}, c}
	}
	return []child{c}
}

// buildClients builds the client binaries into dir, then copies each as
// cp(1) does. The kernel maps a binary's pages as the page cache holds
// them, in folios whose size follows how the file was written, and maps a
// whole folio on a fault: the same agentloop measured 28.5 to 33.7 MiB at
// rest (--help) over four builds as the linker left them, 40.8 MiB written
// with one write(2), and 28.0 to 28.8 MiB copied, in 64 KiB writes or with
// copy_file_range as cp and io.Copy do.
func buildClients(b *testing.B, dir string) {
	for name, pkg := range map[string]string{"agentloop": "../../cmd/agentloop", "floor": "./testdata/bigpayload/floor", "sdk": "./testdata/bigpayload/sdk"} {
		built := filepath.Join(dir, name+".built")
		if out, err := exec.Command("go", "build", "-o", built, pkg).CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
		if err := copyFile(filepath.Join(dir, name), built); err != nil {
			b.Fatal(err)
		}
	}
}

// copyFile copies the executable from to to, with io.Copy.
func copyFile(to, from string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// command returns the command that runs c under GNU time, which writes
// the child's peak RSS in KiB to rssFile. The rusage that os/exec reports
// cannot be used: Go starts a child with vfork, and Linux counts the
// parent's resident set, this benchmark's, into the child's maximum.
func (c child) command(dir, url string, bodySize int, rssFile string) *exec.Cmd {
	bin := c.bin
	if bin == "" {
		bin = filepath.Join(dir, c.name)
	}
	args := append([]string{"-f", "%M", "-o", rssFile, bin}, c.args(url, bodySize)...)
	cmd := exec.Command("/usr/bin/time", args...)
	cmd.Env = []string{"ANTHROPIC_API_KEY=sk-ant-bench", "ANTHROPIC_BASE_URL=" + url, "HOME=" + dir}
	return cmd
}

// runChildren benchmarks each client against a fresh server answering
// replies, reporting its peak RSS. The floor needs the size of agentloop's
// last request body, so agentloop runs once first to learn it; that run
// also renders the streams, which every later server sends as rendered.
func runChildren(b *testing.B, replies []anthropictest.Reply, children ...child) {
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		b.Skip("GNU time is not installed at /usr/bin/time: it measures the clients' peak RSS")
	}
	dir := b.TempDir()
	buildClients(b, dir)
	rssFile := filepath.Join(dir, "rss")
	var bodySize int
	{
		srv := newBenchServer(replies)
		out, err := children[len(children)-1].command(dir, srv.URL, 0, rssFile).CombinedOutput()
		reqs := srv.Requests()
		srv.Close()
		if err != nil || len(reqs) != len(replies) {
			b.Fatalf("agentloop: %v, %d requests for %d replies:\n%s", err, len(reqs), len(replies), out)
		}
		if len(reqs) > 0 {
			bodySize = len(reqs[len(reqs)-1].Body)
		}
	}
	for _, c := range children {
		b.Run(c.name, func(b *testing.B) {
			var peak int64
			for b.Loop() {
				b.StopTimer()
				srv := newBenchServer(replies)
				cmd := c.command(dir, srv.URL, bodySize, rssFile)
				var out bytes.Buffer
				cmd.Stderr = &out
				b.StartTimer()
				err := cmd.Run()
				b.StopTimer()
				srv.Close()
				if n := len(srv.Requests()); err != nil || n != len(replies) {
					b.Fatalf("%s: %v, %d requests for %d replies:\n%s", c.name, err, n, len(replies), out.Bytes())
				}
				rss, err := os.ReadFile(rssFile)
				kib, perr := strconv.ParseInt(strings.TrimSpace(string(rss)), 10, 64)
				if err != nil || perr != nil {
					b.Fatalf("peak RSS: %v %v (%q)", err, perr, rss)
				}
				peak = max(peak, kib)
				b.StartTimer()
			}
			b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
		})
	}
}

func BenchmarkBigPayload(b *testing.B) {
	input := bigInput()
	runChildren(b, bigPayloadReplies(input),
		append([]child{floorChild, sdkChild}, cliChildren("--tools", "calculator", "Write the file.")...)...)
}

// BenchmarkLongText streams an answer of 100,000 text deltas to the CLI,
// whose memory must stay flat however long the answer; the floor reads
// the same stream and discards it. The SDK-only agent is left out: its
// Message.Accumulate joins text with +=, and took 18.7 s per answer.
func BenchmarkLongText(b *testing.B) {
	runChildren(b, longTextReplies(), append([]child{floorChild}, cliChildren("Tell me a long story.")...)...)
}

// BenchmarkBigPayloadUnsaved and BenchmarkLongTextUnsaved are the CLI's
// runs of the two above with --no-session-persistence: what saving the
// session costs is the difference.
func BenchmarkBigPayloadUnsaved(b *testing.B) {
	runChildren(b, bigPayloadReplies(bigInput()), cliChildren("--no-session-persistence", "--tools", "calculator", "Write the file.")...)
}

func BenchmarkLongTextUnsaved(b *testing.B) {
	runChildren(b, longTextReplies(), cliChildren("--no-session-persistence", "Tell me a long story.")...)
}

// BenchmarkShortAnswer is a round trip with nothing big in it, a
// one-word answer: what a run costs beyond the binary at rest (the code
// of the HTTP client, the loop and the renderer, their first buffers),
// which the big payloads' peaks include too.
func BenchmarkShortAnswer(b *testing.B) {
	runChildren(b, []anthropictest.Reply{anthropictest.NewStream().Text("Hi.").Stop("end_turn")},
		append([]child{floorChild}, cliChildren("Say hi.")...)...)
}

// BenchmarkAtRest starts the CLI for --help, which only prints, beside
// the floor's -h: the resting footprint every run starts from, the pages
// of code and tables that the linked packages' init functions touch.
func BenchmarkAtRest(b *testing.B) {
	floor := child{name: "floor", args: func(string, int) []string { return []string{"-h"} }}
	runChildren(b, nil, append([]child{floor}, cliChildren("--help")...)...)
}

// BenchmarkBigPayloadInProcess is the agentloop round trip of
// BenchmarkBigPayload in this process, for the profiler.
func BenchmarkBigPayloadInProcess(b *testing.B) {
	runInProcess(b, bigPayloadReplies(bigInput()), "--tools", "calculator", "Write the file.")
}

// BenchmarkLongTextInProcess is BenchmarkLongText's answer streamed to the
// CLI in this process, for the profiler.
func BenchmarkLongTextInProcess(b *testing.B) {
	runInProcess(b, longTextReplies(), "Tell me a long story.")
}

// runInProcess runs the CLI with args in this process against a fresh
// server answering replies, rendered once, outside the timer. Its HOME is
// a directory of its own, where it saves its sessions as the binary does.
func runInProcess(b *testing.B, replies []anthropictest.Reply, args ...string) {
	for _, r := range replies {
		r.(*anthropictest.Stream).Bytes()
	}
	home := b.TempDir()
	c := &cli{getenv: func(string) string { return "" }, isTerminal: func(any) bool { return false }}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		srv := newBenchServer(replies)
		c.getenv = func(k string) string {
			return map[string]string{"ANTHROPIC_API_KEY": "sk-ant-bench", "ANTHROPIC_BASE_URL": srv.URL, "HOME": home}[k]
		}
		b.StartTimer()
		code := c.main(context.Background(), args, strings.NewReader(""), io.Discard, io.Discard)
		b.StopTimer()
		srv.Close()
		if n := len(srv.Requests()); code != 0 || n != len(replies) {
			b.Fatalf("exit status %d, %d requests for %d replies", code, n, len(replies))
		}
		b.StartTimer()
	}
}
