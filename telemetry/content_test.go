package telemetry

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"
)

func TestJSON(t *testing.T) {
	tests := []struct {
		in   string
		want attribute.Value
	}{
		{`{"b":1,"a":[true,1.5,null,"x"]}`, attribute.MapValue(
			attribute.KeyValue{Key: "a", Value: attribute.SliceValue(attribute.BoolValue(true), attribute.Float64Value(1.5), attribute.Value{}, attribute.StringValue("x"))},
			attribute.Int64("b", 1))},
		{`"text"`, attribute.StringValue("text")},
		{`not json`, attribute.StringValue("not json")},
		{`{} {}`, attribute.StringValue("{} {}")},
	}
	for _, tt := range tests {
		if got := jsonValue([]byte(tt.in)); got.String() != tt.want.String() || got.Type() != tt.want.Type() {
			t.Errorf("jsonValue(%s) = %s, want %s", tt.in, got.String(), tt.want.String())
		}
	}
	if got := textValue("8"); got.Type() != attribute.STRING {
		t.Errorf("textValue(8) is a %v, want a string", got.Type())
	}
	if got := textValue(` {"ok":true}`); got.Type() != attribute.MAP {
		t.Errorf("Text of an object is a %v, want a map", got.Type())
	}
}
