// Command nativeanswers prints every command of the shared corpora with the native validator's
// answer, one JSON object a line, for engines outside Go (the @mediajobs/validator package under
// Node and in Chromium) to compare their answers with, command for command. With -bench it
// instead validates the same commands for that long and prints the native rate, so that a
// foreign engine's rate can be set beside it on the same machine.
//
// Each line is {"name", "command", "options", "answer"}: options is validator.Options in its JSON
// form, answer a string holding the JSON of validator.Validate's Result, byte for byte what POST
// /ffmpeg/validate answers as its data. The lines are corpus.jsonl's cases, then validatortest.Runs (the
// real-world and attack corpora, bare and staged).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/mediajobs/mediajobs/validator"
	"github.com/mediajobs/mediajobs/validator/validatortest"
)

type line struct {
	Name    string            `json:"name"`
	Command string            `json:"command"`
	Options validator.Options `json:"options"`
	// Answer is a string, the JSON text itself, so that engines compare it byte for byte.
	Answer string `json:"answer"`
}

func main() {
	bench := flag.Duration("bench", 0, "validate the commands for this long and print the native rate instead of the answers")
	flag.Parse()
	runs, err := commands()
	if err != nil {
		fmt.Fprintln(os.Stderr, "nativeanswers:", err)
		os.Exit(1)
	}
	if *bench > 0 {
		out, _ := json.Marshal(measure(runs, *bench))
		fmt.Println(string(out))
		return
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	for _, r := range runs {
		answer, err := json.Marshal(validator.Validate(r.Command, r.Options))
		if err != nil {
			fmt.Fprintln(os.Stderr, "nativeanswers:", err)
			os.Exit(1)
		}
		if err := enc.Encode(line{r.Name, r.Command, r.Options, string(answer)}); err != nil {
			fmt.Fprintln(os.Stderr, "nativeanswers:", err)
			os.Exit(1)
		}
	}
}

// commands is corpus.jsonl's cases followed by validatortest.Runs.
func commands() ([]validatortest.Run, error) {
	cases, err := validatortest.Corpus()
	if err != nil {
		return nil, err
	}
	runs := make([]validatortest.Run, 0, len(cases))
	for _, c := range cases {
		runs = append(runs, validatortest.Run{Name: c.Name, Command: c.Command, Options: c.Options})
	}
	more, err := validatortest.Runs()
	if err != nil {
		return nil, err
	}
	return append(runs, more...), nil
}

// rate is what -bench prints.
type rate struct {
	Validations int     `json:"validations"`
	Seconds     float64 `json:"seconds"`
	PerSecond   float64 `json:"perSecond"`
}

// measure validates every command in turn, as BenchmarkNativeVsWazero's native half does
// (Validate, then the JSON answer appended to a reused buffer), until d has passed, after one
// warming pass.
func measure(runs []validatortest.Run, d time.Duration) rate {
	var buf []byte
	for _, r := range runs {
		res := validator.Validate(r.Command, r.Options)
		buf = res.AppendJSON(buf[:0])
	}
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		for _, r := range runs {
			res := validator.Validate(r.Command, r.Options)
			buf = res.AppendJSON(buf[:0])
		}
		n += len(runs)
	}
	s := time.Since(start).Seconds()
	return rate{Validations: n, Seconds: s, PerSecond: float64(n) / s}
}
