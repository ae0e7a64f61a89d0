package tool

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
)

func TestViolations(t *testing.T) {
	type item struct {
		SKU string `json:"sku"`
		N   int    `json:"n"`
	}
	type order struct {
		ID    int    `json:"id"`
		Items []item `json:"items"`
	}
	s, err := jsonschema.For[order](nil)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, data string
		want       []string
	}{
		{"valid", `{"id":1,"items":[{"sku":"a","n":2}]}`, nil},
		{"not JSON", `the order is 1`, []string{"not valid JSON: invalid character 'h' in literal true (expecting 'r')"}},
		{"every violation by path", `{"id":"1","items":[{"sku":"a","n":2},{"sku":3}],"extra":true}`, []string{
			`field "id": got string, want integer`,
			`field "items[1].sku": got number, want string`,
			`missing required field "items[1].n"`,
			`unknown field "extra"; use only the fields in the input schema`,
		}},
		{"not an object", `[1]`, []string{"got array, want object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Violations(rs, []byte(tt.data))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
