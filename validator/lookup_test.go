package validator

import (
	"strings"
	"testing"
)

// TestStrTables: each table answers every key of its map as the map does, and every other name
// the corpus uses (flags, filters, codecs, file names) with the zero value, as the map does.
func TestStrTables(t *testing.T) {
	t.Parallel()
	var probes []string
	for _, c := range benchMix(t) {
		for _, w := range strings.FieldsFunc(c.Command, func(r rune) bool { return strings.ContainsRune(" :=,;[]'\"-", r) }) {
			probes = append(probes, w, strings.ToUpper(w), w+"x", w[:len(w)/2])
		}
	}
	probes = append(probes, "", "\x00", strings.Repeat("a", 300))
	// same reports whether the table answers k as the map does.
	check := func(name string, keys []string, same func(k string) bool) {
		for _, k := range append(keys, probes...) {
			if !same(k) {
				t.Errorf("%s: the table answers %q unlike the map", name, k)
			}
		}
	}
	check("flags", keysOf(flagTable), func(k string) bool { return flagIndex.get(k) == flagTable[k] })
	check("filters", keysOf(filterTable), func(k string) bool { return filterIndex.get(k) == filterTable[k] })
	check("gpu codecs", append(keysOf(gpuEncoders), keysOf(gpuDecoders)...), func(k string) bool {
		want := gpuNone
		if gpuDecoders[k] {
			want = gpuDecoder
		} else if gpuEncoders[k] {
			want = gpuEncoder
		}
		return gpuCodecIndex.get(k) == want
	})
	check("lavfi sources", keysOf(lavfiSources), func(k string) bool { return lavfiSourceIndex.get(k) == lavfiSources[k] })
	if len(probes) < 1000 {
		t.Fatalf("only %d probes", len(probes))
	}
}

func keysOf[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
