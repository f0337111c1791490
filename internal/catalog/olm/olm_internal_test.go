package olm

import "testing"

// TestPlainDataString: the fast path takes only {"data": "<no escapes>"}.
func TestPlainDataString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"data":"YQ=="}`, "YQ=="},                // compact, as opm -o json writes it
		{"{\n    \"data\": \"YQ==\"\n}\n", "YQ=="}, // indented
		{`{"data":"Y\/Q="}`, ""},                   // an escape: the slow path decodes it
		{`{"data":"YQ==","x":1}`, ""},              // another field
		{`{"data":""}`, ""},                        // empty
		{`{"other":"YQ=="}`, ""},                   // no data
	} {
		if got := string(plainDataString([]byte(tc.in))); got != tc.want {
			t.Errorf("plainDataString(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// "Y/Q=" is valid base64 for two bytes; the slow path decodes it.
	if got, err := decodeObject([]byte(`{"data":"Y\/Q="}`)); err != nil || len(got) != 2 {
		t.Errorf("decodeObject with an escape = %q, %v", got, err)
	}
}
