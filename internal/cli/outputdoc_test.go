package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
)

// TestREADMEDocumentsOutput checks the README's tables of --output-format
// json and stream-json against the types the command encodes: every event
// type of package agent has its row, naming each field its line holds, and
// the result object's table has a row for each of its fields and none
// more. A field or an event added without a word in the README fails here.
func TestREADMEDocumentsOutput(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)

	// Every event, as package agent declares them (the types with an
	// isEvent method): one added there fails here until it is listed.
	events := []agent.Event{agent.TurnStart{}, agent.TextDelta{}, agent.ThinkingDelta{}, agent.ToolCallStart{},
		agent.ToolInputDelta{}, agent.ToolCall{}, agent.ToolDone{}, agent.UsageUpdate{}, agent.Compacted{},
		agent.Repaired{}, agent.Retry{}, agent.Result{}}
	// A subagent's event (Nested) is written as its own event, with two
	// fields added, which the README's paragraph under the table names.
	listed := []string{"Nested"}
	for _, ev := range events {
		listed = append(listed, reflect.TypeOf(ev).Name())
	}
	for _, f := range []string{"parent_tool_use_id", "agent", "subagent_done"} {
		if !strings.Contains(readme, "`"+f+"`") {
			t.Errorf("README does not say how a subagent's events are written: %q is missing", f)
		}
	}
	if diff := cmp.Diff(eventTypesIn(t, filepath.Join("..", "..", "agent")), sorted(listed)); diff != "" {
		t.Errorf("the events of package agent (-declared +listed here):\n%s", diff)
	}

	want := map[string][]string{"error": jsonFields(reflect.TypeFor[errorRecord]())}
	for _, ev := range events {
		fields := jsonFields(reflect.TypeOf(ev))
		if _, ok := ev.(agent.Result); ok { // written {"type":"done","result":…,"error":…}
			fields = append([]string{"result", "error"}, fields...)
		}
		want[eventType(ev)] = fields
	}
	stream := tableRows(t, readme, "| `type` | when | fields |")
	if diff := cmp.Diff(sorted(keys(want)), sorted(keys(stream))); diff != "" {
		t.Errorf("the stream-json table's types (-written +documented):\n%s", diff)
	}
	for typ, fields := range want {
		documented := docNames(stream[typ][1])
		for _, f := range fields {
			if f != "type" && !slices.Contains(documented, f) {
				t.Errorf("README: the stream-json %q row does not document the field %q", typ, f)
			}
		}
	}

	result := tableRows(t, readme, "| field | meaning |")
	if diff := cmp.Diff(sorted(jsonFields(reflect.TypeFor[resultRecord]())), sorted(keys(result))); diff != "" {
		t.Errorf("the json result table's fields (-written +documented):\n%s", diff)
	}
	for row, typ := range map[string]reflect.Type{"usage": reflect.TypeFor[llm.Usage](), "permission_denials": reflect.TypeFor[denial]()} {
		documented := docNames(result[row][0])
		for _, f := range jsonFields(typ) {
			if !slices.Contains(documented, f) {
				t.Errorf("README: the json result's %q row does not document the field %q", row, f)
			}
		}
	}
}

// eventTypesIn returns the names of the types declared in the Go files of
// dir, tests aside, that have an isEvent method.
func eventTypesIn(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "isEvent" && fn.Recv != nil {
				if id, ok := fn.Recv.List[0].Type.(*ast.Ident); ok {
					names = append(names, id.Name)
				}
			}
		}
	}
	return sorted(names)
}

// jsonFields returns the names encoding/json gives the fields of the
// struct type typ, those of embedded structs included.
func jsonFields(typ reflect.Type) []string {
	var names []string
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case f.Anonymous && name == "":
			names = append(names, jsonFields(f.Type)...)
		case name == "":
			names = append(names, f.Name)
		default:
			names = append(names, name)
		}
	}
	return names
}

// tableRows returns the rows of the README table under header, by the name
// in their first cell's backquotes, each with its other cells.
func tableRows(t *testing.T, readme, header string) map[string][]string {
	t.Helper()
	i := strings.Index(readme, "\n"+header+"\n")
	if i < 0 {
		t.Fatalf("README: no table headed %s", header)
	}
	rows := map[string][]string{}
	lines := strings.Split(readme[i+1:], "\n")
	for _, l := range lines[2:] { // past the header and its rule
		if !strings.HasPrefix(l, "|") {
			break
		}
		cells := strings.Split(strings.Trim(l, "|"), " | ")
		rows[strings.Trim(strings.TrimSpace(cells[0]), "`")] = cells[1:]
	}
	return rows
}

var (
	codeSpan = regexp.MustCompile("`[^`]*`")
	jsonName = regexp.MustCompile(`[a-z][a-z_]*`)
)

// docNames returns the names a README cell writes in code: `name`, or
// each of `{"a","b"}`.
func docNames(cell string) []string {
	var names []string
	for _, span := range codeSpan.FindAllString(cell, -1) {
		names = append(names, jsonName.FindAllString(span, -1)...)
	}
	return names
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
