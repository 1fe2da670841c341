package translate

import (
	"testing"

	"github.com/tidwall/gjson"
)

func TestAddStreamUsageSplice(t *testing.T) {
	for in, want := range map[string]string{
		`{"model":"a","stream":true}`:                                         `{"model":"a","stream":true,"stream_options":{"include_usage":true}}`,
		"{\"stream\":true} \n":                                                "{\"stream\":true,\"stream_options\":{\"include_usage\":true}} \n",
		`{"stream":true,"stream_options":null}`:                               `{"stream":true,"stream_options":{"include_usage":true}}`,
		`{"stream":true,"stream_options":{}}`:                                 `{"stream":true,"stream_options":{"include_usage":true}}`,
		`{"stream":true,"stream_options":{ }}`:                                `{"stream":true,"stream_options":{"include_usage":true }}`,
		`{"stream":true,"stream_options":{"x":1}}`:                            `{"stream":true,"stream_options":{"include_usage":true,"x":1}}`,
		`{"stream":true,"stream_options":{"include_usage":false},"n":1}`:      `{"stream":true,"stream_options":{"include_usage":true},"n":1}`,
		`{"stream_options":{"x":1,"include_usage":null},"stream":true}`:       `{"stream_options":{"x":1,"include_usage":true},"stream":true}`,
		`{"stream":true,"messages":[{"role":"user","content":"} stream_o"}]}`: `{"stream":true,"messages":[{"role":"user","content":"} stream_o"}],"stream_options":{"include_usage":true}}`,
	} {
		out, asked := AddStreamUsage([]byte(in))
		if string(out) != want || asked {
			t.Errorf("AddStreamUsage(%s) = %s, %v; want %s", in, out, asked, want)
		}
		if !gjson.ValidBytes(out) {
			t.Errorf("invalid JSON: %s", out)
		}
	}
}

func TestSetModelSplice(t *testing.T) {
	for _, c := range []struct{ in, model, want string }{
		{`{"model":"a","x":1}`, "b", `{"model":"b","x":1}`},
		{`{"x":{"model":"keep"}, "model" : "a" }`, `q"u\ote`, `{"x":{"model":"keep"}, "model" : "q\"u\\ote" }`},
		{`{"model":5}`, "m", `{"model":"m"}`},
		{`{"x":1}`, "m", `{"x":1,"model":"m"}`},
	} {
		out, err := SetModel([]byte(c.in), c.model)
		if err != nil || string(out) != c.want {
			t.Errorf("SetModel(%s, %q) = %s, %v; want %s", c.in, c.model, out, err, c.want)
		}
	}
	in := []byte(`{"model":"same"}`)
	if out, _ := SetModel(in, "same"); &out[0] != &in[0] {
		t.Error("an unchanged model must not copy the body")
	}
}
