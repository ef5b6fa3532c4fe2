package validator

import (
	"slices"
	"strings"
)

// Flag is one option of the flags layer's allowlist.
type Flag struct {
	// Name is the option as typed, with its dash ("-c", "-noautorotate").
	Name string `json:"flag"`
	// Reason is why the flag is safe to let through, shared by the flags of its group.
	Reason string `json:"reason"`
	// TakesValue tells whether the next word is the flag's value.
	TakesValue bool `json:"takesValue"`
	// StreamSpecifier tells whether the flag takes a stream specifier (-c:v, -b:a:1).
	StreamSpecifier bool `json:"streamSpecifier"`
}

// FlagGroup is a set of flags let through for one reason and checked alike.
type FlagGroup struct {
	Reason string
	// Flags are the group's options as typed, with their dash, sorted.
	Flags []string
}

// Flags returns the allowlist of the flags layer, sorted by name: every option a command may
// use, each with the reason it is safe. A flag outside it is refused ("flag -x is not allowed").
// Its values and the filters, formats and paths it names are checked by the other layers.
func Flags() []Flag {
	out := make([]Flag, 0, len(flagTable))
	for _, g := range flagGroups {
		for _, name := range g.names {
			out = append(out, Flag{Name: "-" + name, Reason: g.why, TakesValue: g.spec.takesValue(), StreamSpecifier: g.spec.stream})
		}
	}
	slices.SortFunc(out, func(a, b Flag) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// FlagGroups returns the allowlist by reason, in the order the flags layer lists them.
func FlagGroups() []FlagGroup {
	out := make([]FlagGroup, len(flagGroups))
	for i, g := range flagGroups {
		names := make([]string, len(g.names))
		for j, n := range g.names {
			names[j] = "-" + n
		}
		slices.Sort(names)
		out[i] = FlagGroup{Reason: g.why, Flags: names}
	}
	return out
}

// FlagValue is what the value of an allowed flag is, for a caller that places text there.
type FlagValue uint8

const (
	// ValueNone: the flag is not allowed, or is a switch that takes no value.
	ValueNone FlagValue = iota
	// ValueGraph: a filter graph (-vf, -af, -filter:v, -filter_complex, -lavfi).
	ValueGraph
	// ValueFile: a file read or written, or a part of such a name (-i, -attach, -passlogfile,
	// -hls_segment_filename, -master_pl_name, -hls_base_url, ...).
	ValueFile
	// ValueOther: a number, a name or an option string FFmpeg parses, never a file.
	ValueOther
)

// ValueOf says what the value of flag, as typed with its dash and any stream specifier, is.
func ValueOf(flag string) FlagValue {
	if len(flag) < 2 || flag[0] != '-' {
		return ValueNone
	}
	spec, _, err := lookupFlag(flag)
	switch {
	case err != nil || !spec.takesValue():
		return ValueNone
	case spec.kind == vGraph:
		return ValueGraph
	case spec.kind == vInput || spec.kind == vWrite || spec.kind == vWritePlain || spec.kind == vTemplate ||
		spec.kind == vRead || spec.kind == vRelURL || spec.kind == vPassLog:
		return ValueFile
	}
	return ValueOther
}
