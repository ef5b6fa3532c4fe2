package validator

// strTable is a read-only map from strings, built once from one of the validator's tables. A
// lookup is one FNV-1a hash of the key and, almost always, one string comparison; a Go map
// lookup (wyhash, swiss-table groups) costs several times that under WASM, where the validator
// looks up every flag, filter and codec name it reads. Hand-written rather than a library, as
// the validator is stdlib-only; lookup_test.go holds it to the map it is built from.
type strTable[V any] struct {
	slots []strSlot[V]
	mask  uint32
}

type strSlot[V any] struct {
	key  string
	val  V
	used bool
}

// newStrTable indexes m in a table at most half full, so that probe runs stay short.
func newStrTable[V any](m map[string]V) *strTable[V] {
	n := 8
	for n < 2*len(m) {
		n <<= 1
	}
	t := &strTable[V]{slots: make([]strSlot[V], n), mask: uint32(n - 1)}
	for k, v := range m {
		i := strHash(k) & t.mask
		for t.slots[i].used {
			i = (i + 1) & t.mask
		}
		t.slots[i] = strSlot[V]{key: k, val: v, used: true}
	}
	return t
}

func strHash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// get is m[k] of the map the table was built from.
func (t *strTable[V]) get(k string) V {
	v, _ := t.lookup(k)
	return v
}

// lookup is v, ok := m[k] of the map the table was built from.
func (t *strTable[V]) lookup(k string) (V, bool) {
	i := strHash(k) & t.mask
	for {
		s := &t.slots[i]
		if !s.used {
			var zero V
			return zero, false
		}
		if s.key == k {
			return s.val, true
		}
		i = (i + 1) & t.mask
	}
}
