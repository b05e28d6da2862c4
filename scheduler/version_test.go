package scheduler

import "testing"

func TestVersionConstraints(t *testing.T) {
	cases := []struct {
		constraint string
		version    string
		strict     bool
		want       bool
	}{
		// version: lenient segments, ranges, pessimistic.
		{">= 1.2, < 2.0", "1.2.0", false, true},
		{">= 1.2, < 2.0", "1.9.9", false, true},
		{">= 1.2, < 2.0", "2.0.0", false, false},
		{">= 1.2, < 2.0", "1.1", false, false},
		{"~> 1.2", "1.2.0", false, true},
		{"~> 1.2", "1.9", false, true},
		{"~> 1.2", "2.0", false, false},
		{"~> 1.2", "1.1.9", false, false},
		{"~> 1.2.3", "1.2.9", false, true},
		{"~> 1.2.3", "1.3.0", false, false},
		{"~> 1.2.3", "1.2.2", false, false},
		{"= 1.2.3", "1.2.3", false, true},
		{"1.2.3", "1.2.3", false, true},
		{"1.2", "1.2.0", false, true},
		{"!= 1.2.3", "1.2.3", false, false},
		{"!= 1.2.3", "1.2.4", false, true},
		{"> 1.0", "1.0.1", false, true},
		{"<= 1.0", "1.0.0", false, true},
		{">= 1.2", "v1.3.0", false, true},
		{">= 1.2", "1.3.0+build.5", false, true},
		{">= 1.2", "1.3.0-beta1", false, false},         // lenient: prerelease needs a prerelease term
		{">= 1.3.0-beta1", "1.3.0-beta2", false, true},  // same base, later prerelease
		{">= 1.3.0-beta1", "1.4.0-beta2", false, false}, // different base
		{">= 1.2.0", "1.3.0-beta1", true, true},         // semver: prerelease ordered per spec
		{">= 1.3.0", "1.3.0-beta1", true, false},        // prerelease below its release
		{"< 1.3.0", "1.3.0-rc.1", true, true},
		{"> 1.0.0-alpha.1", "1.0.0-alpha.beta", true, true}, // numeric < alphanumeric
		{"> 1.0.0-alpha", "1.0.0-alpha.1", true, true},      // more fields is greater
		{"< 1.0.0-beta.11", "1.0.0-beta.2", true, true},     // numeric compare
		{">= 1.2", "1.3.0", true, false},                    // semver constraint needs X.Y.Z: never matches
		{">= 1.2.0", "1.3", true, false},                    // semver version needs X.Y.Z
		{"~> 1.2.0", "1.2.1", true, false},                  // semver has no ~>
		{">= 1.2", "banana", false, false},
		{"garbage", "1.0", false, false},
		{">= 01.2.0", "1.3.0", true, false}, // leading zero
	}
	cache := newCompileCache()
	for _, c := range cases {
		t.Run(c.constraint+" "+c.version, func(t *testing.T) {
			vc := cache.version(c.constraint, c.strict)
			got := false
			if vc != nil {
				if v, err := parseVersion(c.version, c.strict); err == nil {
					got = vc.check(v)
				}
			}
			if got != c.want {
				t.Fatalf("%q %q (strict=%v) = %v, want %v", c.version, c.constraint, c.strict, got, c.want)
			}
		})
	}
}

func TestVersionCompare(t *testing.T) {
	ordered := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0"}
	for i := 0; i+1 < len(ordered); i++ {
		a, err := parseVersion(ordered[i], true)
		if err != nil {
			t.Fatal(err)
		}
		b, err := parseVersion(ordered[i+1], true)
		if err != nil {
			t.Fatal(err)
		}
		if a.compare(b) >= 0 || b.compare(a) <= 0 {
			t.Fatalf("%s should sort before %s", ordered[i], ordered[i+1])
		}
	}
}
