package transcribetest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// Clip is a 16 kHz mono 16-bit PCM WAV file made for one test: what a Transcriber is given.
type Clip struct {
	Path     string
	Duration time.Duration
	// SpeechStart and SpeechEnd bound the speech synthesizer's output within the clip (its own
	// short lead and trail of silence included); both are 0 for a silent clip.
	SpeechStart, SpeechEnd time.Duration
}

// SpeechParams says what a speech clip says.
type SpeechParams struct {
	// Language picks espeak-ng's voice (an ISO-639-1 code); default "en".
	Language string
	Text     string
	// Lead and Trail are the silences put before and after the speech.
	Lead, Trail time.Duration
}

// Speech makes a clip of espeak-ng saying p.Text, in a directory that a sandbox running as
// another user can reach, as the runner's work directory is.
func Speech(t *testing.T, p SpeechParams) Clip {
	t.Helper()
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		testenv.Missing(t, "espeak-ng (scripts/deps.sh installs it)", err)
	}
	if p.Language == "" {
		p.Language = "en"
	}
	dir := clipDir(t)
	raw := filepath.Join(dir, "speech.wav")
	if out, err := exec.Command("espeak-ng", "-v", p.Language, "-w", raw, p.Text).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng -v %s: %v %s", p.Language, err, out)
	}
	spoken := wavDuration(t, raw)
	path := filepath.Join(dir, "audio.wav")
	filter := fmt.Sprintf("adelay=delays=%d:all=1,apad=pad_dur=%s", p.Lead.Milliseconds(), strconv.FormatFloat(p.Trail.Seconds(), 'f', 3, 64))
	ffmpeg(t, "-i", raw, "-af", filter, path)
	return Clip{Path: path, Duration: wavDuration(t, path), SpeechStart: p.Lead, SpeechEnd: p.Lead + spoken}
}

// Silence makes a clip of d of digital silence; d may be 0, a WAV file with no samples.
func Silence(t *testing.T, d time.Duration) Clip {
	t.Helper()
	path := filepath.Join(clipDir(t), "audio.wav")
	ffmpeg(t, "-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono", "-t", strconv.FormatFloat(d.Seconds(), 'f', 3, 64), path)
	return Clip{Path: path, Duration: wavDuration(t, path)}
}

// clipDir is a fresh directory whose parent another user can traverse (t.TempDir's is 0700).
func clipDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// ffmpeg writes the 16 kHz mono PCM WAV file that args, less the output options, describe.
func ffmpeg(t *testing.T, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		testenv.Missing(t, "ffmpeg (scripts/deps.sh installs it)", err)
	}
	out := args[len(args)-1]
	args = append([]string{"-nostdin", "-v", "error"}, args[:len(args)-1]...)
	args = append(args, "-ar", "16000", "-ac", "1", "-c:a", "pcm_s16le", "-f", "wav", out)
	if b, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %q: %v %s", args, err, b)
	}
}

func wavDuration(t *testing.T, path string) time.Duration {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := readWAV(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return w.duration()
}

// wav is the PCM of a WAV file.
type wav struct {
	rate, channels int
	samples        []int16 // interleaved
}

func (w wav) duration() time.Duration {
	return time.Duration(int64(len(w.samples)) * int64(time.Second) / int64(w.rate*w.channels))
}

var errNotWAV = errors.New("not a 16-bit PCM WAV file")

// readWAV reads a RIFF WAVE file of 16-bit PCM: the form the port takes, and all the fake
// server accepts.
func readWAV(r io.Reader) (wav, error) {
	var head [12]byte
	if _, err := io.ReadFull(r, head[:]); err != nil || string(head[:4]) != "RIFF" || string(head[8:]) != "WAVE" {
		return wav{}, errNotWAV
	}
	var w wav
	for {
		var ch [8]byte
		if _, err := io.ReadFull(r, ch[:]); err != nil {
			return wav{}, fmt.Errorf("%w: no data chunk", errNotWAV)
		}
		size := int64(binary.LittleEndian.Uint32(ch[4:]))
		body, err := io.ReadAll(io.LimitReader(r, size+size%2))
		if err != nil || int64(len(body)) < size {
			return wav{}, fmt.Errorf("%w: chunk %q cut short", errNotWAV, ch[:4])
		}
		switch string(ch[:4]) {
		case "fmt ":
			if size < 16 || binary.LittleEndian.Uint16(body) != 1 || binary.LittleEndian.Uint16(body[14:]) != 16 {
				return wav{}, errNotWAV
			}
			w.channels, w.rate = int(binary.LittleEndian.Uint16(body[2:])), int(binary.LittleEndian.Uint32(body[4:]))
		case "data":
			if w.rate == 0 || w.channels == 0 {
				return wav{}, fmt.Errorf("%w: data before fmt", errNotWAV)
			}
			w.samples = make([]int16, size/2)
			if err := binary.Read(bytes.NewReader(body[:size/2*2]), binary.LittleEndian, w.samples); err != nil {
				return wav{}, err
			}
			return w, nil
		}
	}
}
