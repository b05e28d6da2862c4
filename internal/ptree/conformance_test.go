package ptree

import (
	"fmt"
	"math/rand/v2"
	"testing"

	iradix "github.com/hashicorp/go-immutable-radix"
)

// TestConformancePtreeAgainstIradix holds the tree to the library it
// replaced for the allocations (go-immutable-radix, under go-memdb's
// tables): the same random transactions, some committed and some
// abandoned, applied to both, must give the same answers to every
// write (the value replaced or deleted), the same Get and Len, the same
// keys in the same order from Ascend (from the start, from keys present
// and absent) and AscendPrefix (iradix's SeekLowerBound and SeekPrefix),
// and every earlier committed version of both must stay as it was.
//
// Keys come from a small alphabet that includes NUL and 0xff, with the
// empty key, keys that are prefixes of others and keys sharing long
// prefixes (the byJob keys are namespace NUL job NUL allocation ID), so
// that the order prefix of 8 bytes is tested on both sides of its edge.
func TestConformancePtreeAgainstIradix(t *testing.T) {
	seeds := 24
	if testing.Short() {
		seeds = 8
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 22))
			keySpace := []int{8, 64, 600, 3000}[seed%4]
			keys := conformanceKeys(rng, keySpace)
			tree, rad := New[int](), iradix.New()
			type version struct {
				tree *Tree[int]
				rad  *iradix.Tree
			}
			var versions []version
			for round := range 30 {
				x, rx := tree.Txn(), rad.Txn()
				for op := rng.IntN(200); op >= 0; op-- {
					k := keys[rng.IntN(len(keys))]
					if rng.IntN(3) == 0 {
						old, ok := x.Delete(k)
						rold, rok := rx.Delete([]byte(k))
						if ok != rok || ok && old != rold.(int) {
							t.Fatalf("round %d: Delete(%q) = %d, %v; iradix %v, %v", round, k, old, ok, rold, rok)
						}
						continue
					}
					v := rng.Int()
					old, replaced := x.Set(k, v)
					rold, rreplaced := rx.Insert([]byte(k), v)
					if replaced != rreplaced || replaced && old != rold.(int) {
						t.Fatalf("round %d: Set(%q) replaced %d, %v; iradix %v, %v", round, k, old, replaced, rold, rreplaced)
					}
				}
				// The transaction reads its own writes, as iradix's does.
				compareWithIradix(t, rng, &x.view, rx.Root(), keys, "transaction")
				if rng.IntN(4) == 0 {
					continue // abandoned: both trees stay as they were
				}
				versions = append(versions, version{tree, rad})
				tree, rad = x.Commit(), rx.Commit()
				if tree.Len() != rad.Len() {
					t.Fatalf("round %d: Len %d, iradix %d", round, tree.Len(), rad.Len())
				}
				compareWithIradix(t, rng, &tree.view, rad.Root(), keys, fmt.Sprint("commit ", round))
			}
			for i, v := range versions {
				compareWithIradix(t, rng, &v.tree.view, v.rad.Root(), keys, fmt.Sprint("version ", i))
			}
		})
	}
}

// conformanceKeys returns n distinct keys of the shapes the tree meets.
func conformanceKeys(rng *rand.Rand, n int) []string {
	alphabet := []byte{0, 'a', 'b', 'z', 0x7f, 0xff}
	seen := map[string]bool{}
	var out []string
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	add("")
	for len(out) < n {
		var k []byte
		switch rng.IntN(4) {
		case 0: // short, over a small alphabet: many are prefixes of others
			for range rng.IntN(10) {
				k = append(k, alphabet[rng.IntN(len(alphabet))])
			}
		case 1: // a job key: namespace NUL job NUL ID
			k = fmt.Appendf(nil, "ns%d\x00job-%d\x00%08x", rng.IntN(3), rng.IntN(20), rng.Uint32())
		case 2: // IDs sharing their first 16 bytes
			k = fmt.Appendf(nil, "bench-c1m-small-%06d", rng.IntN(1000000))
		default: // random bytes around the 8-byte order prefix's edge
			k = make([]byte, 6+rng.IntN(5))
			for i := range k {
				k[i] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		add(string(k))
	}
	return out
}

// compareWithIradix checks that v and the radix tree under root hold the
// same keys and values, in the same order, for full, lower-bound and
// prefix scans.
func compareWithIradix(t *testing.T, rng *rand.Rand, v *view[int], root *iradix.Node, keys []string, when string) {
	t.Helper()
	n := 0
	root.Walk(func(k []byte, val any) bool { n++; return false })
	if v.Len() != n {
		t.Fatalf("%s: Len %d, iradix holds %d", when, v.Len(), n)
	}
	for _, k := range keys {
		got, ok := v.Get(k)
		want, wok := root.Get([]byte(k))
		if ok != wok || ok && got != want.(int) {
			t.Fatalf("%s: Get(%q) = %d, %v; iradix %v, %v", when, k, got, ok, want, wok)
		}
	}
	type kv struct {
		k string
		v int
	}
	// limit bounds a scan, so that many scans stay cheap (0: none).
	collect := func(scan func(fn func(string, int) bool), limit int) []kv {
		var out []kv
		scan(func(k string, val int) bool {
			out = append(out, kv{k, val})
			return limit == 0 || len(out) < limit
		})
		return out
	}
	fromIter := func(it *iradix.Iterator, limit int) []kv {
		var out []kv
		for k, val, ok := it.Next(); ok; k, val, ok = it.Next() {
			out = append(out, kv{string(k), val.(int)})
			if limit > 0 && len(out) == limit {
				break
			}
		}
		return out
	}
	same := func(what string, got, want []kv) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %s gave %d keys, iradix %d", when, what, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: %s key %d is %q=%d, iradix %q=%d", when, what, i, got[i].k, got[i].v, want[i].k, want[i].v)
			}
		}
	}
	same("Ascend", collect(func(fn func(string, int) bool) { v.Ascend("", fn) }, 0), fromIter(root.Iterator(), 0))
	for range 20 {
		// From a key that may be present, or one just after or before one.
		from := keys[rng.IntN(len(keys))]
		switch rng.IntN(3) {
		case 1:
			from += "\x00"
		case 2:
			if from != "" {
				from = from[:len(from)-1]
			}
		}
		it := root.Iterator()
		it.SeekLowerBound([]byte(from))
		same(fmt.Sprintf("Ascend(%q)", from), collect(func(fn func(string, int) bool) { v.Ascend(from, fn) }, 50), fromIter(it, 50))

		prefix := keys[rng.IntN(len(keys))]
		prefix = prefix[:rng.IntN(len(prefix)+1)]
		it = root.Iterator()
		it.SeekPrefix([]byte(prefix))
		same(fmt.Sprintf("AscendPrefix(%q)", prefix), collect(func(fn func(string, int) bool) { v.AscendPrefix(prefix, fn) }, 0), fromIter(it, 0))
	}
}
