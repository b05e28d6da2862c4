package jobspec

import "testing"

// BenchmarkParseExample parses the `drover job init` example (variables,
// every supported block).
func BenchmarkParseExample(b *testing.B) {
	src := []byte(ExampleJob)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("example.nomad.hcl", src, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseJSON parses the same job in the API's JSON shape.
func BenchmarkParseJSON(b *testing.B) {
	job, err := Parse("example.nomad.hcl", []byte(ExampleJob), nil)
	if err != nil {
		b.Fatal(err)
	}
	src := mustJSON(b, map[string]any{"Job": job})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("example.json", src, nil); err != nil {
			b.Fatal(err)
		}
	}
}
