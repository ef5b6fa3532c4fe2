package validator

import (
	"slices"
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
	boolTables := []struct {
		name  string
		m     map[string]bool
		index *strTable[bool]
	}{
		{"playlist exts", playlistExts, playlistExtIndex},
		{"image formats", imageFormats, imageFormatIndex},
		{"spec formats", specFormats, specFormatIndex},
		{"input formats", inputFormats, inputFormatIndex},
		{"size filters", sizeFilters, sizeFilterIndex},
		{"rate filters", rateFilters, rateFilterIndex},
		{"frame rate names", frameRateNames, frameRateNameIndex},
		{"dash identifiers", dashIdentifiers, dashIdentifierIndex},
	}
	for _, tb := range boolTables {
		check(tb.name, keysOf(tb.m), func(k string) bool { return tb.index.get(k) == tb.m[k] })
	}
	check("ext formats", keysOf(extFormats), func(k string) bool { return extFormatIndex.get(k) == extFormats[k] })
	check("demuxers", keysOf(demuxers), func(k string) bool { return demuxerIndex.get(k) == demuxers[k] })
	check("list exts", keysOf(listExts), func(k string) bool { return listExtIndex.get(k) == listExts[k] })
	check("output muxers", keysOf(outputMuxers), func(k string) bool {
		got, gotOK := outputMuxerIndex.lookup(k)
		want, wantOK := outputMuxers[k]
		return gotOK == wantOK && got.kind == want.kind && slices.Equal(got.formats, want.formats)
	})
	check("local names", keysOf(localNames), func(k string) bool { return slices.Equal(localNameIndex.get(k), localNames[k]) })
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
