package subtitle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// ParseTranscript reads a transcript with word timings: a JSON word list
// [{"word": "hello", "start": 0.52, "end": 0.9}, ...] with times in seconds (fractions allowed),
// or an SRT or VTT file whose cues are split into words timed in proportion to their length.
func ParseTranscript(data []byte, lim Limits) ([]Word, error) {
	lim = lim.withDefaults()
	if len(data) > lim.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(data), lim.MaxBytes)
	}
	if t := bytes.TrimSpace(bytes.TrimPrefix(data, bom)); len(t) > 0 && t[0] == '[' {
		return parseWordList(t, lim)
	}
	cues, err := Parse(data, lim)
	if err != nil {
		return nil, err
	}
	return WordsFromCues(cues), nil
}

func parseWordList(data []byte, lim Limits) ([]Word, error) {
	var list []struct {
		Word  *string  `json:"word"`
		Start *float64 `json:"start"`
		End   *float64 `json:"end"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("transcript word list: %v", err)
	}
	if len(list) > lim.MaxCues {
		return nil, fmt.Errorf("%w: %d words, at most %d", ErrTooManyCues, len(list), lim.MaxCues)
	}
	words := make([]Word, 0, len(list))
	for i, w := range list {
		if w.Word == nil || w.Start == nil || w.End == nil {
			return nil, fmt.Errorf("transcript word %d needs word, start and end", i)
		}
		if !validSeconds(*w.Start) || !validSeconds(*w.End) || *w.End < *w.Start {
			return nil, fmt.Errorf("transcript word %d: start %v and end %v must be seconds, 0 <= start <= end", i, *w.Start, *w.End)
		}
		text := cleanLine(*w.Word, FormatSRT)
		if utf8.RuneCountInString(text) > lim.MaxLineRunes {
			return nil, fmt.Errorf("%w: transcript word %d", ErrLineTooLong, i)
		}
		if text == "" {
			continue
		}
		words = append(words, Word{Text: text, Start: seconds(*w.Start), End: seconds(*w.End)})
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("%w: the word list is empty", ErrNoCues)
	}
	return words, nil
}

func validSeconds(f float64) bool { return !math.IsNaN(f) && f >= 0 && f < 1e6 }

func seconds(f float64) time.Duration { return time.Duration(math.Round(f * float64(time.Second))) }

// WordsFromCues splits each cue's text into words and spreads the cue's time over them in
// proportion to their length: the best guess without word timings.
func WordsFromCues(cues []Cue) []Word {
	var words []Word
	for _, c := range cues {
		fields := strings.Fields(c.Text)
		total := 0
		for _, f := range fields {
			total += utf8.RuneCountInString(f) + 1
		}
		at, span := c.Start, c.End-c.Start
		for _, f := range fields {
			d := span * time.Duration(utf8.RuneCountInString(f)+1) / time.Duration(total)
			words = append(words, Word{Text: f, Start: at, End: at + d})
			at += d
		}
	}
	return words
}
