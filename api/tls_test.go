package api

import "testing"

// DROVER_ variables win over Nomad's; Nomad's alone are enough.
func TestTLSConfigFromEnv(t *testing.T) {
	env := map[string]string{
		"NOMAD_CACERT": "nomad-ca.pem", "DROVER_CACERT": "drover-ca.pem",
		"NOMAD_CLIENT_CERT": "c.pem", "NOMAD_CLIENT_KEY": "k.pem",
		"NOMAD_TLS_SERVER_NAME": "server.global.nomad", "NOMAD_SKIP_VERIFY": "true",
	}
	got := TLSConfigFromEnv(func(k string) string { return env[k] })
	want := TLSConfig{CACert: "drover-ca.pem", ClientCert: "c.pem", ClientKey: "k.pem",
		ServerName: "server.global.nomad", Insecure: true}
	if got != want {
		t.Fatalf("TLSConfigFromEnv = %+v, want %+v", got, want)
	}
	if !TLSConfigFromEnv(func(string) string { return "" }).IsZero() {
		t.Fatal("no variables: not zero")
	}
	if _, err := (TLSConfig{ClientCert: "c.pem"}).HTTPClient(); err == nil {
		t.Fatal("-client-cert without -client-key: no error")
	}
}
