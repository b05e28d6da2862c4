package ptree

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// model is the map a tree must equal.
type model map[string]int

func (m model) sortedKeys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// check compares t with m: Len, Get of every key and of absent ones,
// Ascend from every key and between keys, and the tree's invariants.
func check(t *testing.T, tree *Tree[int], m model) {
	t.Helper()
	if tree.Len() != len(m) {
		t.Fatalf("Len = %d, want %d", tree.Len(), len(m))
	}
	keys := m.sortedKeys()
	var got []string
	tree.Ascend("", func(k string, v int) bool {
		if m[k] != v {
			t.Fatalf("Ascend: %q = %d, want %d", k, v, m[k])
		}
		got = append(got, k)
		return true
	})
	if tree.hashed {
		slices.Sort(got) // hash order
	}
	if !slices.Equal(got, keys) {
		t.Fatalf("Ascend gave %d keys, want %d (%v vs %v)", len(got), len(keys), head(got), head(keys))
	}
	for i, k := range keys {
		if v, ok := tree.Get(k); !ok || v != m[k] {
			t.Fatalf("Get(%q) = %d, %v; want %d", k, v, ok, m[k])
		}
		if _, ok := tree.Get(k + "\x00"); ok {
			t.Fatalf("Get(%q) found an absent key", k+"\x00")
		}
		if i%7 == 0 && !tree.hashed {
			var from []string
			tree.Ascend(k, func(k string, _ int) bool { from = append(from, k); return len(from) < 3 })
			if want := keys[i:min(i+3, len(keys))]; !slices.Equal(from, want) {
				t.Fatalf("Ascend(%q) = %v, want %v", k, from, want)
			}
		}
	}
	checkNode(t, tree.root, skey{}, nil, true, tree.hashed)
}

// checkNode checks that every key under n is in [lo, hi) (hi nil: no
// bound), in order, with its order prefix, and that inner nodes have one
// separator fewer than children.
func checkNode(t *testing.T, n *node[int], lo skey, hi *skey, root, hashed bool) {
	t.Helper()
	if n == nil {
		if !root {
			t.Fatal("nil child")
		}
		return
	}
	keys := n.keys
	if n.leaf() {
		keys = nil
		for _, e := range n.entries {
			keys = append(keys, e.key)
		}
		if len(n.keys) != 0 || len(keys) > maxEntries || !root && len(keys) == 0 {
			t.Fatalf("leaf with %d entries, %d separators", len(keys), len(n.keys))
		}
	}
	for i, k := range keys {
		if k != keyOf(k.s, hashed) {
			t.Fatalf("key %q with prefix %x", k.s, k.pre)
		}
		if i > 0 && !keys[i-1].less(k) {
			t.Fatalf("keys %q, %q out of order", keys[i-1].s, k.s)
		}
	}
	if len(keys) > 0 && (keys[0].less(lo) || hi != nil && !keys[len(keys)-1].less(*hi)) {
		t.Fatalf("keys %q..%q outside [%q, %v)", keys[0].s, keys[len(keys)-1].s, lo.s, hi)
	}
	if n.leaf() {
		return
	}
	if len(n.kids) != len(n.keys)+1 || len(n.kids) > maxEntries {
		t.Fatalf("inner node with %d children, %d separators", len(n.kids), len(n.keys))
	}
	for i, kid := range n.kids {
		klo, khi := lo, hi
		if i > 0 {
			klo = n.keys[i-1]
		}
		if i < len(n.keys) {
			khi = &n.keys[i]
		}
		checkNode(t, kid, klo, khi, false, hashed)
	}
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// TestRandomAgainstMap applies random sets and deletes in transactions of
// random size, checks each committed tree against a map, and checks that
// every earlier tree still holds exactly what it held when committed.
func TestRandomAgainstMap(t *testing.T) {
	for _, c := range []struct {
		keySpace int
		hashed   bool
	}{{10, false}, {300, false}, {5000, false}, {300, true}, {5000, true}} {
		keySpace := c.keySpace
		t.Run(fmt.Sprintf("%d hashed=%v", keySpace, c.hashed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(keySpace), 7))
			tree := New[int]()
			if c.hashed {
				tree = NewHashed[int]()
			}
			m := model{}
			type version struct {
				tree *Tree[int]
				m    model
			}
			var versions []version
			for round := 0; round < 60; round++ {
				x := tree.Txn()
				next := maps(m)
				for op := rng.IntN(400); op >= 0; op-- {
					k := keyFor(rng.IntN(keySpace))
					if rng.IntN(3) == 0 {
						old, ok := x.Delete(k)
						want, had := next[k]
						if ok != had || old != want {
							t.Fatalf("Delete(%q) = %d, %v; want %d, %v", k, old, ok, want, had)
						}
						delete(next, k)
						continue
					}
					v := rng.Int()
					old, replaced := x.Set(k, v)
					want, had := next[k]
					if replaced != had || old != want {
						t.Fatalf("Set(%q) replaced %d, %v; want %d, %v", k, old, replaced, want, had)
					}
					next[k] = v
					if got, ok := x.Get(k); !ok || got != v {
						t.Fatalf("Txn.Get(%q) after Set = %d, %v", k, got, ok)
					}
				}
				if x.Len() != len(next) {
					t.Fatalf("Txn.Len = %d, want %d", x.Len(), len(next))
				}
				if rng.IntN(5) == 0 {
					continue // abandoned: tree and m stay as they were
				}
				versions = append(versions, version{tree, m})
				tree, m = x.Commit(), next
				check(t, tree, m)
			}
			for _, v := range versions {
				check(t, v.tree, v.m)
			}
		})
	}
}

// keyFor gives keys of several shapes: short ones (shorter than the
// 8-byte order prefix, some prefixes of others), and long ones sharing
// their first 16 bytes, as generated IDs do.
func keyFor(i int) string {
	switch i % 3 {
	case 0:
		return fmt.Sprint(i / 3)
	case 1:
		return fmt.Sprintf("bench-c1m-small-%06d", i)
	}
	return fmt.Sprintf("%08x-%d", uint32(i)*2654435761, i)
}

func maps(m model) model {
	out := make(model, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestDeleteEverything empties a large tree in random order, then fills
// it again.
func TestDeleteEverything(t *testing.T) {
	x := (&Tree[int]{}).Txn()
	keys := make([]string, 3000)
	for i := range keys {
		keys[i] = fmt.Sprintf("%08x", i*2654435761)
		x.Set(keys[i], i)
	}
	full := x.Commit()
	x = full.Txn()
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for i, k := range keys {
		if _, ok := x.Delete(k); !ok {
			t.Fatalf("Delete(%q) found nothing", k)
		}
		if i%500 == 0 {
			if _, ok := x.Get(k); ok {
				t.Fatalf("%q still there", k)
			}
		}
	}
	empty := x.Commit()
	check(t, empty, model{})
	if empty.root != nil {
		t.Fatal("empty tree kept a root")
	}
	m := model{}
	for i, k := range keys {
		m[k] = i
	}
	x = empty.Txn()
	for i, k := range keys {
		x.Set(k, i)
	}
	check(t, x.Commit(), m)
	if full.Len() != len(keys) {
		t.Fatalf("the first tree changed: Len %d", full.Len())
	}
}

func TestAscendPrefix(t *testing.T) {
	x := (&Tree[int]{}).Txn()
	for i := 0; i < 500; i++ {
		x.Set(fmt.Sprintf("ns\x00job%d\x00%04d", i%10, i), i)
	}
	tree := x.Commit()
	var got []int
	tree.AscendPrefix("ns\x00job3\x00", func(k string, v int) bool {
		if !strings.HasPrefix(k, "ns\x00job3\x00") {
			t.Fatalf("key %q outside the prefix", k)
		}
		got = append(got, v)
		return true
	})
	if len(got) != 50 || got[0] != 3 || got[49] != 493 || !slices.IsSorted(got) {
		t.Fatalf("prefix scan: %d values, %v", len(got), got)
	}
	n := 0
	tree.AscendPrefix("ns\x00job3\x00", func(string, int) bool { n++; return n < 4 })
	if n != 4 {
		t.Fatalf("scan went on after false: %d calls", n)
	}
	tree.AscendPrefix("nothing", func(string, int) bool { t.Fatal("match for an absent prefix"); return true })
}

// TestConcurrentReadersAndWriters has readers scan a committed tree while
// transactions started from that same tree write; run with -race.
func TestConcurrentReadersAndWriters(t *testing.T) {
	x := (&Tree[int]{}).Txn()
	for i := 0; i < 2000; i++ {
		x.Set(fmt.Sprintf("%05d", i), i)
	}
	base := x.Commit()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for round := 0; round < 20; round++ {
				sum, n := 0, 0
				base.Ascend("", func(_ string, v int) bool { sum += v; n++; return true })
				if n != 2000 || sum != 1999*2000/2 {
					t.Errorf("reader saw %d keys, sum %d", n, sum)
					return
				}
			}
		}()
		go func(w int) {
			defer wg.Done()
			x := base.Txn()
			for i := 0; i < 2000; i += 1 + w {
				x.Set(fmt.Sprintf("%05d", i), -i)
				if i%3 == 0 {
					x.Delete(fmt.Sprintf("%05d", i))
				}
			}
			x.Commit()
		}(w)
	}
	wg.Wait()
}

func BenchmarkSet100Into100k(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := (&Tree[*int]{}).Txn()
	v := new(int)
	for i := 0; i < 100000; i++ {
		x.Set(fmt.Sprintf("%016x-%016x", rng.Uint64(), rng.Uint64()), v)
	}
	tree := x.Commit()
	keys := make([]string, 100*b.N)
	for i := range keys {
		keys[i] = fmt.Sprintf("%016x-%016x", rng.Uint64(), rng.Uint64())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x := tree.Txn()
		for _, k := range keys[i*100 : (i+1)*100] {
			x.Set(k, v)
		}
		tree = x.Commit()
	}
}

// TestHashedTreeRefusesPrefixScans checks that a prefix scan of a hashed
// tree, whose order is not the keys', panics instead of answering wrong.
func TestHashedTreeRefusesPrefixScans(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	NewHashed[int]().AscendPrefix("a", func(string, int) bool { return true })
}

// BenchmarkGet looks up random keys of a 100,000-key tree: UUID-like
// keys, and keys sharing a 16-byte prefix in a key-ordered and a hashed
// tree.
func BenchmarkGet(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		name   string
		key    func(i int) string
		hashed bool
	}{
		{"uuid", func(int) string { return fmt.Sprintf("%08x-%04x-%016x", rng.Uint32(), rng.Uint32()>>16, rng.Uint64()) }, false},
		{"shared-prefix", func(i int) string { return fmt.Sprintf("bench-c1m-small-%06d", i) }, false},
		{"shared-prefix-hashed", func(i int) string { return fmt.Sprintf("bench-c1m-small-%06d", i) }, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			tree := New[int]()
			if c.hashed {
				tree = NewHashed[int]()
			}
			x := tree.Txn()
			keys := make([]string, 100000)
			for i := range keys {
				keys[i] = c.key(i)
				x.Set(keys[i], i)
			}
			tree = x.Commit()
			rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, ok := tree.Get(keys[i%len(keys)]); !ok {
					b.Fatal("missing")
				}
			}
		})
	}
}
