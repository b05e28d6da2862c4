// Package ptree is a persistent (copy-on-write) B+-tree from string keys to
// values, in key order.
//
// A Tree is immutable: any number of goroutines may read it at once, and
// it never changes. Writes go through a Txn started from a Tree; the Txn
// copies a node the first time it changes it and changes its own copies in
// place after that, so a transaction of many writes copies each node on
// its paths once. Commit returns the new Tree; the Tree the Txn started
// from is untouched, and so is every other Tree sharing its nodes.
//
// Starting a Txn writes nothing to the Tree it starts from (unlike Clone
// in github.com/google/btree, which gives the source tree a new
// copy-on-write context), so transactions may start from a Tree that
// other goroutines are reading, and several may start from the same Tree.
//
// Keys are ordered by an 8-byte prefix held next to each key, then by
// the whole key. In a tree made by New that prefix is the key's first 8
// bytes, so the order is the keys' byte order, and a search compares
// keys whose first 8 bytes differ without reading their bytes (each read
// of a key elsewhere in memory is a cache miss). In a tree made by
// NewHashed it is a hash of the key: the order is arbitrary but fixed
// within a process, and keys that share a long prefix (as generated node
// IDs do) compare as quickly as random ones. A hashed tree has no prefix
// scans.
//
// Deletes do not rebalance: a node is removed when it becomes empty, and
// may otherwise stay less than half full. Keys that are deleted and
// inserted again in a different order therefore leave the tree shallower
// than a balanced one would need, never deeper: every insert keeps the
// B-tree height bound of the keys present at its time.
package ptree

import (
	"encoding/binary"
	"hash/maphash"
	"strings"
)

// maxEntries is the most keys a leaf, and the most children an inner
// node, holds. A full node splits in two halves.
const maxEntries = 32

// token marks the nodes a Txn created: it may change them in place. It is
// not zero-sized, so every token has its own address.
type token struct{ _ byte }

type node[V any] struct {
	owner *token
	// A leaf's entries, sorted by key (one slice, so that copying a leaf
	// allocates once).
	entries []entry[V]
	// An inner node's separators, where keys[i] is the smallest key under
	// kids[i+1] (len(kids)-1 of them), and its children; kids is nil for
	// a leaf.
	keys []skey
	kids []*node[V]
}

type entry[V any] struct {
	key skey
	val V
}

// skey is a key with its order prefix (see the package comment).
type skey struct {
	pre uint64
	s   string
}

func (k skey) less(o skey) bool {
	if k.pre != o.pre {
		return k.pre < o.pre
	}
	return k.s < o.s
}

// hashSeed orders every hashed tree of the process.
var hashSeed = maphash.MakeSeed()

// fromKey is where Ascend from from starts: "" is before every key, in
// hash order too.
func fromKey(from string, hashed bool) skey {
	if from == "" {
		return skey{}
	}
	return keyOf(from, hashed)
}

// keyOf returns key with its order prefix for a tree hashed or not.
func keyOf(key string, hashed bool) skey {
	if hashed {
		return skey{pre: maphash.String(hashSeed, key), s: key}
	}
	var b [8]byte
	copy(b[:], key)
	return skey{pre: binary.BigEndian.Uint64(b[:]), s: key}
}

func (n *node[V]) leaf() bool { return n.kids == nil }

// Tree is an immutable map from string keys to V, in key order. The zero
// value is an empty tree as New makes it.
type Tree[V any] struct {
	view[V]
}

// view holds what a Tree and a Txn read.
type view[V any] struct {
	root   *node[V]
	n      int
	hashed bool
}

// New returns an empty tree in key order.
func New[V any]() *Tree[V] { return &Tree[V]{} }

// NewHashed returns an empty tree in hash order (see the package
// comment): quick lookups whatever the keys share, no prefix scans.
func NewHashed[V any]() *Tree[V] { return &Tree[V]{view[V]{hashed: true}} }

// Len returns the number of keys.
func (t *view[V]) Len() int { return t.n }

// Get returns the value of key and whether it is present.
func (t *view[V]) Get(key string) (V, bool) { return get(t.root, keyOf(key, t.hashed)) }

// Ascend calls fn with each key at or after from, in the tree's order,
// until fn returns false. On a hashed tree only Ascend("", fn), which
// visits every key, is meaningful. On a Txn, fn must not write to it.
func (t *view[V]) Ascend(from string, fn func(key string, v V) bool) {
	ascend(t.root, fromKey(from, t.hashed), fn)
}

// AscendPrefix calls fn with each key that starts with prefix, in order,
// until fn returns false. It panics on a hashed tree. On a Txn, fn must
// not write to it.
func (t *view[V]) AscendPrefix(prefix string, fn func(key string, v V) bool) {
	if t.hashed {
		panic("ptree: prefix scan of a hashed tree")
	}
	ascend(t.root, keyOf(prefix, false), func(k string, v V) bool {
		return strings.HasPrefix(k, prefix) && fn(k, v)
	})
}

// Txn starts a write transaction from t. t does not change.
func (t *Tree[V]) Txn() *Txn[V] {
	return &Txn[V]{view: t.view, owner: new(token)}
}

// Txn is a write transaction: the reads of a Tree (Len, Get, Ascend,
// AscendPrefix) see its writes. It is not safe for concurrent use.
type Txn[V any] struct {
	view[V]
	owner *token
}

// Commit returns a Tree with the transaction's keys. The transaction
// must not be used afterwards: the Tree shares its nodes.
func (x *Txn[V]) Commit() *Tree[V] {
	t := &Tree[V]{view: x.view}
	x.view, x.owner = view[V]{}, nil
	return t
}

// Set sets key to v and returns the value it replaces, if any.
func (x *Txn[V]) Set(key string, v V) (old V, replaced bool) {
	k := keyOf(key, x.hashed)
	if x.root == nil {
		x.root = &node[V]{owner: x.owner, entries: make([]entry[V], 0, 4)}
	}
	root := x.own(x.root)
	var right *node[V]
	var sep skey
	root, right, sep, old, replaced = x.set(root, k, v)
	if right != nil {
		kids := make([]*node[V], 2, maxEntries)
		kids[0], kids[1] = root, right
		keys := make([]skey, 1, maxEntries-1)
		keys[0] = sep
		root = &node[V]{owner: x.owner, keys: keys, kids: kids}
	}
	x.root = root
	if !replaced {
		x.n++
	}
	return old, replaced
}

// set writes key into n, which the transaction owns. When n splits it
// returns the new right half and the smallest key under it.
func (x *Txn[V]) set(n *node[V], key skey, v V) (_ *node[V], right *node[V], sep skey, old V, replaced bool) {
	if n.leaf() {
		i, found := searchEntries(n.entries, key)
		if found {
			old, n.entries[i].val = n.entries[i].val, v
			return n, nil, skey{}, old, true
		}
		if len(n.entries) == maxEntries {
			right = x.splitLeaf(n)
			if i > len(n.entries) {
				insertAt(&right.entries, i-len(n.entries), entry[V]{key, v})
			} else {
				insertAt(&n.entries, i, entry[V]{key, v})
			}
			return n, right, right.entries[0].key, old, false
		}
		insertAt(&n.entries, i, entry[V]{key, v})
		return n, nil, skey{}, old, false
	}
	i := childIndex(n.keys, key)
	kid := x.own(n.kids[i])
	n.kids[i] = kid
	var kidRight *node[V]
	var kidSep skey
	_, kidRight, kidSep, old, replaced = x.set(kid, key, v)
	if kidRight == nil {
		return n, nil, skey{}, old, replaced
	}
	if len(n.kids) == maxEntries {
		right, sep = x.splitInner(n)
		if i >= len(n.kids) {
			i -= len(n.kids)
			insertAt(&right.keys, i, kidSep)
			insertAt(&right.kids, i+1, kidRight)
		} else {
			insertAt(&n.keys, i, kidSep)
			insertAt(&n.kids, i+1, kidRight)
		}
		return n, right, sep, old, replaced
	}
	insertAt(&n.keys, i, kidSep)
	insertAt(&n.kids, i+1, kidRight)
	return n, nil, skey{}, old, replaced
}

// splitLeaf moves the upper half of the full leaf n into a new leaf.
func (x *Txn[V]) splitLeaf(n *node[V]) *node[V] {
	h := len(n.entries) / 2
	right := &node[V]{owner: x.owner, entries: make([]entry[V], len(n.entries)-h, len(n.entries)-h+1)}
	copy(right.entries, n.entries[h:])
	clear(n.entries[h:])
	n.entries = n.entries[:h]
	return right
}

// splitInner moves the upper half of the full inner node n's children
// into a new node and returns it with the smallest key under it (the
// separator n no longer holds).
func (x *Txn[V]) splitInner(n *node[V]) (*node[V], skey) {
	h := len(n.kids) / 2
	right := &node[V]{owner: x.owner, keys: make([]skey, len(n.keys)-h, len(n.keys)-h+1), kids: make([]*node[V], len(n.kids)-h, len(n.kids)-h+1)}
	copy(right.kids, n.kids[h:])
	copy(right.keys, n.keys[h:])
	sep := n.keys[h-1]
	clear(n.kids[h:])
	clear(n.keys[h-1:])
	n.kids, n.keys = n.kids[:h], n.keys[:h-1]
	return right, sep
}

// Delete removes key and returns its value, if it was present.
func (x *Txn[V]) Delete(key string) (old V, ok bool) {
	if x.root == nil {
		return old, false
	}
	k := keyOf(key, x.hashed)
	if _, found := get(x.root, k); !found {
		return old, false // copy nothing
	}
	root := x.own(x.root)
	old = x.delete(root, k)
	x.n--
	for !root.leaf() && len(root.kids) == 1 {
		root = root.kids[0]
	}
	if root.leaf() && len(root.entries) == 0 || !root.leaf() && len(root.kids) == 0 {
		root = nil
	}
	x.root = root
	return old, true
}

// delete removes key, which is present, from n, which the transaction
// owns. A child left empty is removed from n.
func (x *Txn[V]) delete(n *node[V], key skey) (old V) {
	if n.leaf() {
		i, _ := searchEntries(n.entries, key)
		old = n.entries[i].val
		removeAt(&n.entries, i)
		return old
	}
	i := childIndex(n.keys, key)
	kid := x.own(n.kids[i])
	n.kids[i] = kid
	old = x.delete(kid, key)
	if kid.leaf() && len(kid.entries) > 0 || !kid.leaf() && len(kid.kids) > 0 {
		return old
	}
	removeAt(&n.kids, i)
	if i > 0 {
		removeAt(&n.keys, i-1)
	} else if len(n.keys) > 0 {
		// The first child went: the second becomes the first and needs
		// no separator.
		removeAt(&n.keys, 0)
	}
	return old
}

// own returns n if the transaction created it, else a copy it may change.
// The copy has room for one more entry or child: most transactions write
// a node once (keys spread over the tree), and a second insert into the
// same node grows it as append does.
func (x *Txn[V]) own(n *node[V]) *node[V] {
	if n.owner == x.owner {
		return n
	}
	c := &node[V]{owner: x.owner}
	if n.leaf() {
		c.entries = append(make([]entry[V], 0, len(n.entries)+1), n.entries...)
		return c
	}
	c.keys = append(make([]skey, 0, len(n.keys)+1), n.keys...)
	c.kids = append(make([]*node[V], 0, len(n.kids)+1), n.kids...)
	return c
}

func get[V any](n *node[V], key skey) (V, bool) {
	for n != nil {
		if n.leaf() {
			if i, found := searchEntries(n.entries, key); found {
				return n.entries[i].val, true
			}
			break
		}
		n = n.kids[childIndex(n.keys, key)]
	}
	var zero V
	return zero, false
}

func ascend[V any](n *node[V], from skey, fn func(string, V) bool) bool {
	if n == nil {
		return true
	}
	if n.leaf() {
		i, _ := searchEntries(n.entries, from)
		for ; i < len(n.entries); i++ {
			if !fn(n.entries[i].key.s, n.entries[i].val) {
				return false
			}
		}
		return true
	}
	for i := childIndex(n.keys, from); i < len(n.kids); i++ {
		if !ascend(n.kids[i], from, fn) {
			return false
		}
	}
	return true
}

// searchEntries returns the position of key in the sorted entries, or
// where it would be inserted, and whether it is there.
func searchEntries[V any](entries []entry[V], key skey) (int, bool) {
	lo, hi := 0, len(entries)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if entries[m].key.less(key) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(entries) && entries[lo].key == key
}

// childIndex returns which child of an inner node with separators keys
// holds key: the number of separators at or below key.
func childIndex(keys []skey, key skey) int {
	lo, hi := 0, len(keys)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if !key.less(keys[m]) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func insertAt[T any](s *[]T, i int, v T) {
	var zero T
	*s = append(*s, zero)
	copy((*s)[i+1:], (*s)[i:])
	(*s)[i] = v
}

func removeAt[T any](s *[]T, i int) {
	copy((*s)[i:], (*s)[i+1:])
	var zero T
	(*s)[len(*s)-1] = zero
	*s = (*s)[:len(*s)-1]
}
