package apirules

import "testing"

func TestInvalidInput(t *testing.T) {
	if got, ok := InvalidInput(MarkInvalid([]byte(`[1, "\u00e9`))); !ok || got != `[1, "\u00e9` {
		t.Errorf("InvalidInput(MarkInvalid(…)) = %q, %v", got, ok)
	}
	for in, want := range map[string]string{
		`{"x":1}`: "", `{"x":1,"INVALID_JSON":"a"}`: "", `{"INVALID_JSON":1}`: "", `{"INVALID_JSON":"a","x":1}`: "",
		`[]`: "", ``: "", `{"INVALID_JSON":"a"`: "", ` { "INVALID_JSON" : "a" } `: "a", `{"INVALID\u005fJSON":"a"}`: "a",
		`{"INVALID_JSON":null}`: "", `{"invalid_json":"a"}`: "",
		`{"INVALID_JSON":"a","INVALID_JSON":"b"}`: "b", `{"INVALID\u005fJSON":"a","INVALID_JSON":"b"}`: "b",
	} {
		if got, ok := InvalidInput([]byte(in)); got != want || ok != (want != "") {
			t.Errorf("InvalidInput(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
