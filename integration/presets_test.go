package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

type presetView struct {
	Name      string          `json:"name"`
	Command   string          `json:"command"`
	Version   int             `json:"version"`
	Builtin   bool            `json:"builtin"`
	Inputs    []string        `json:"inputs"`
	Variables json.RawMessage `json:"variables"`
}

// presetJob is a job as GET /jobs/{id} shows it, with the params a preset made.
type presetJob struct {
	jobView
	Params struct {
		Command string `json:"command"`
		Preset  struct {
			Name      string                     `json:"name"`
			Version   int                        `json:"version"`
			Variables map[string]json.RawMessage `json:"variables"`
		} `json:"preset"`
	} `json:"params"`
}

// wantRefused checks an error answer's status, code and that its message names what.
func wantRefused(t *testing.T, r response, status int, code, what string) {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &e)
	if r.Status != status || e.Error.Code != code || !strings.Contains(e.Error.Message, what) {
		t.Errorf("status %d %s; want %d %s naming %q", r.Status, r.Body, status, code, what)
	}
}

// presetClip writes a 3-second 160x90 clip with a 440 Hz tone (about -21 LUFS) as clip.mp4 in dir.
func presetClip(t *testing.T, dir string) string {
	t.Helper()
	if err := ffmpegBare(context.Background(), dir, "-f", "lavfi", "-i", "testsrc2=duration=3:size=160x90:rate=10",
		"-f", "lavfi", "-i", "sine=frequency=440:duration=3:sample_rate=48000", "-c:v", "libx264", "-preset", "ultrafast",
		"-pix_fmt", "yuv420p", "-g", "10", "-c:a", "aac", "-shortest", "clip.mp4"); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "clip.mp4")
}

// TestPresets saves, reads, updates (at its version) and deletes a preset through the binary on
// both stores; uses the account's preset and the built-ins over REST, MCP and the CLI (run
// --preset web-mp4 -v height=480 clip.mp4); refuses values that would become a flag or a path,
// naming the variable; and runs every built-in on a generated clip, probing what it wrote.
func TestPresets(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		clipPath := presetClip(t, dir)
		clip, err := os.ReadFile(clipPath)
		if err != nil {
			t.Fatal(err)
		}
		s := startServer(t, serverOpts{Unthrottled: true, Backend: b})
		acct := createAccount(t, s, "pro")
		c := newClient(t, s, acct.APIKey)

		mine := map[string]any{"name": "small", "command": "ffmpeg -i in.mp4 -vf scale=-2:{{height}},drawbox=color={{color}} -c:v libx264 -preset ultrafast -tune {{tune}} -crf {{crf}} out.mp4",
			"variables": map[string]any{
				"height": map[string]any{"type": "integer", "default": 72, "min": 36, "max": 720},
				"crf":    map[string]any{"type": "integer", "min": 18, "max": 40},
				"color":  map[string]any{"type": "string", "default": "red", "maxLength": 20},
				"tune":   map[string]any{"type": "string", "default": "zerolatency", "maxLength": 20},
			}}
		var p presetView
		c.do(http.MethodPost, "/presets", mine, nil).decode(t, http.StatusCreated, &p)
		if p.Version != 1 || p.Builtin || strings.Join(p.Inputs, ",") != "in.mp4" {
			t.Errorf("created %+v", p)
		}
		wantRefused(t, c.do(http.MethodPost, "/presets", mine, nil), http.StatusConflict, "CONFLICT", "exists")
		for _, tc := range []struct{ command, what string }{
			{"ffmpeg -i in.mp4 -{{crf}} 1 out.mp4", "{{crf}}"},
			{"ffmpeg -i in.mp4 -crf 20 {{crf}}.mp4", "{{crf}}"},
			{"ffmpeg -i {{crf}}.mp4 out.mp4", "{{crf}}"},
		} {
			bad := map[string]any{"name": "bad", "command": tc.command, "variables": map[string]any{"crf": map[string]any{"type": "integer", "min": 1, "max": 2}}}
			wantRefused(t, c.do(http.MethodPost, "/presets", bad, nil), http.StatusBadRequest, "VALIDATION_ERROR", tc.what)
		}

		var list []presetView
		c.do(http.MethodGet, "/presets", nil, nil).decode(t, http.StatusOK, &list)
		var names []string
		for _, p := range list {
			names = append(names, p.Name)
		}
		if got := strings.Join(names, " "); got != "gif-preview hls-ladder loudness-r128 thumbnail-sprite web-mp4 small" {
			t.Errorf("listed %s", got)
		}

		mine["command"] = strings.Replace(mine["command"].(string), "-crf", "-threads 1 -crf", 1)
		wantRefused(t, c.do(http.MethodPut, "/presets/small", mine, nil), http.StatusBadRequest, "VALIDATION_ERROR", "version is required")
		c.do(http.MethodPut, "/presets/small", mine, http.Header{"If-Match": {`"1"`}}).decode(t, http.StatusOK, &p)
		if p.Version != 2 {
			t.Errorf("updated to version %d, want 2", p.Version)
		}
		wantRefused(t, c.do(http.MethodPut, "/presets/small", mine, http.Header{"If-Match": {`"1"`}}), http.StatusConflict, "CONFLICT", "version 2, not 1")
		wantRefused(t, c.do(http.MethodPut, "/presets/web-mp4", mine, http.Header{"If-Match": {`"1"`}}), http.StatusForbidden, "FORBIDDEN", "read-only")
		wantRefused(t, c.do(http.MethodDelete, "/presets/web-mp4", nil, nil), http.StatusForbidden, "FORBIDDEN", "read-only")

		up := c.uploadRaw("clip.mp4", clip)
		inputs := map[string]any{"in.mp4": up.URL}
		submit := func(preset string, variables map[string]any) response {
			return c.do(http.MethodPost, "/jobs", map[string]any{"type": "ffmpeg", "inputs": inputs,
				"params": map[string]any{"preset": preset, "variables": variables}}, nil)
		}
		// Values that would be a flag, a path, or more of the filter graph are refused at submit,
		// naming the variable, and store no job.
		for _, tc := range []struct {
			preset    string
			variables map[string]any
			what      string
		}{
			{"small", map[string]any{"crf": 30, "tune": "-i"}, "params.variables.tune"},
			{"small", map[string]any{"crf": 30, "tune": "-y /tmp/x.mp4"}, "params.variables.tune"},
			{"small", map[string]any{"crf": 30, "color": "red,movie=/etc/passwd"}, "params.variables.color"},
			{"small", map[string]any{"crf": 30, "color": "red[a];amovie=/etc/passwd"}, "params.variables.color"},
			{"small", map[string]any{"crf": 99}, "params.variables.crf"},
			{"small", map[string]any{}, "params.variables.crf"},
			{"web-mp4", map[string]any{"speed": "-i /etc/passwd"}, "params.variables.speed"},
			{"web-mp4", map[string]any{"height": "480 -f null"}, "params.variables.height"},
		} {
			wantRefused(t, submit(tc.preset, tc.variables), http.StatusBadRequest, "VALIDATION_ERROR", tc.what)
		}
		var stored []jobView
		c.do(http.MethodGet, "/jobs", nil, nil).decode(t, http.StatusOK, &stored)
		if len(stored) != 0 {
			t.Errorf("refused submits stored %d jobs", len(stored))
		}

		// REST: the account's preset and every built-in, all submitted before any is awaited.
		sprite := map[string]any{"interval": 1, "width": 80, "height": 45, "columns": 2, "rows": 2}
		runs := []struct {
			preset    string
			variables map[string]any
		}{
			{"small", map[string]any{"crf": 30, "color": "blue"}},
			{"web-mp4", map[string]any{"height": 144, "speed": "ultrafast"}},
			{"hls-ladder", map[string]any{"gop": 20, "segment": 2}},
			{"thumbnail-sprite", sprite},
			{"gif-preview", map[string]any{"duration": 1, "fps": 5, "width": 64}},
			{"loudness-r128", map[string]any{"target": -16}},
		}
		ids := map[string]string{}
		for _, r := range runs {
			var cr created
			submit(r.preset, r.variables).decode(t, http.StatusCreated, &cr)
			ids[r.preset] = cr.ID
		}
		// MCP: a preset saved over MCP, and a job made from it by submit_job's preset.
		cs, err := mcpConnect(t, s, acct.APIKey)
		if err != nil {
			t.Fatal(err)
		}
		var saved presetView
		mcpOK(t, cs, "save_preset", map[string]any{"name": "poster", "command": "ffmpeg -ss {{at}} -i in.mp4 -frames:v 1 -vf scale={{width}}:-2 poster.png",
			"variables": map[string]any{
				"at":    map[string]any{"type": "number", "default": 1, "min": 0, "max": 3600},
				"width": map[string]any{"type": "integer", "min": 16, "max": 1920},
			}}, &saved)
		if saved.Version != 1 || strings.Join(saved.Inputs, ",") != "in.mp4" {
			t.Errorf("save_preset answered %+v", saved)
		}
		if te := mcpErr(t, cs, "submit_job", map[string]any{"type": "ffmpeg", "preset": "poster", "inputs": inputs,
			"variables": map[string]any{"width": "-vf"}}); te.Code != "VALIDATION_ERROR" || !strings.Contains(te.Message, "params.variables.width") {
			t.Errorf("submit_job with a flag for width: %+v", te)
		}
		var sub created
		mcpOK(t, cs, "submit_job", map[string]any{"type": "ffmpeg", "preset": "poster", "inputs": inputs, "variables": map[string]any{"width": 32}}, &sub)
		var got presetView
		mcpOK(t, cs, "get_preset", map[string]any{"name": "small"}, &got)
		if got.Version != 2 {
			t.Errorf("get_preset small: version %d, want 2", got.Version)
		}

		// The CLI: run --preset with a local file mapped to the preset's in.mp4.
		cli := func(args ...string) cliResult {
			t.Helper()
			return mediajobs(t, dir, []string{"MEDIAJOBS_SERVER=" + s.Base, "MEDIAJOBS_API_KEY=" + acct.APIKey}, args...)
		}
		r := cli("run", "--preset", "web-mp4", "-v", "height=480", "-v", "speed=ultrafast", "clip.mp4")
		if r.code != 0 {
			t.Fatalf("run --preset web-mp4: exit %d\n%s", r.code, r.stderr)
		}
		if pr := ffprobe(t, filepath.Join(dir, "out.mp4")); len(pr.Streams) == 0 || pr.Streams[0].Height != 480 {
			t.Errorf("run --preset web-mp4 -v height=480 wrote %+v", pr)
		}
		if r := cli("run", "--preset", "web-mp4", "-v", "speed=-i", "clip.mp4"); r.code != 1 || !strings.Contains(r.stderr, "params.variables.speed") {
			t.Errorf("run --preset with a flag for speed: exit %d, %s", r.code, r.stderr)
		}
		if r := cli("presets", "list"); r.code != 0 || !regexp.MustCompile(`(?m)^small\s+2\s+false\s+in\.mp4\s+color=red crf height=72 tune=zerolatency$`).MatchString(r.stdout) {
			t.Errorf("presets list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}

		for _, run := range runs {
			j := c.waitTerminal(ids[run.preset])
			if j.Status != "complete" {
				t.Errorf("%s: %s %s", run.preset, j.Status, errorText(j))
				continue
			}
			var pj presetJob
			c.do(http.MethodGet, "/jobs/"+j.ID, nil, nil).decode(t, http.StatusOK, &pj)
			if pj.Params.Preset.Name != run.preset || strings.Contains(pj.Params.Command, "{{") {
				t.Errorf("%s: params %+v", run.preset, pj.Params)
			}
			checkPresetOutputs(t, c, run.preset, j, pj)
		}
		j := c.waitTerminal(sub.ID)
		if j.Status != "complete" || j.Output.File == nil || j.Output.File.Meta == nil || j.Output.File.Meta.Width != 32 {
			t.Errorf("MCP's poster job: %+v %s", j, errorText(j))
		}

		if r := c.do(http.MethodDelete, "/presets/small", nil, nil); r.Status != http.StatusNoContent {
			t.Errorf("delete: %d %s", r.Status, r.Body)
		}
		wantRefused(t, c.do(http.MethodGet, "/presets/small", nil, nil), http.StatusNotFound, "NOT_FOUND", "small")
		// A job made from the deleted preset keeps what it ran.
		if j := c.job(ids["small"]); j.Status != "complete" {
			t.Errorf("the job of a deleted preset is %s", j.Status)
		}
	})
}

// checkPresetOutputs downloads what a preset's job wrote and probes it.
func checkPresetOutputs(t *testing.T, c *client, preset string, j jobView, pj presetJob) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{}
	for _, f := range j.Output.Files {
		local := filepath.Join(dir, f.Path)
		if err := os.WriteFile(local, c.mustGet(f.URL), 0o644); err != nil {
			t.Fatal(err)
		}
		files[f.Path] = local
	}
	switch preset {
	case "small", "web-mp4":
		want := map[string]int{"small": 72, "web-mp4": 144}[preset]
		if pr := ffprobe(t, files["out.mp4"]); len(pr.Streams) == 0 || pr.Streams[0].Height != want {
			t.Errorf("%s: out.mp4 %+v, want %d high", preset, pr, want)
		}
	case "hls-ladder":
		master, err := os.ReadFile(files["master.m3u8"])
		if err != nil {
			t.Fatalf("hls-ladder wrote %v: %v", files, err)
		}
		// Each rendition: its RESOLUTION in the master, and its playlist's first segment probed.
		re := regexp.MustCompile(`#EXT-X-STREAM-INF:[^\n]*RESOLUTION=(\d+)x(\d+)[^\n]*\n(\S+)`)
		var got []string
		for _, m := range re.FindAllStringSubmatch(string(master), -1) {
			// The service serves its playlists with signed URLs: the file is the URL's last segment.
			playlist, err := os.ReadFile(files[path.Base(m[3])])
			if err != nil {
				t.Fatalf("hls-ladder: the master names %s, which is not an output: %v", m[3], err)
			}
			seg := regexp.MustCompile(`(?m)^[^#\s]\S*\.ts$`).FindString(string(playlist))
			pr := ffprobe(t, files[path.Base(seg)])
			size := ""
			for _, st := range pr.Streams {
				if st.CodecType == "video" {
					size = fmt.Sprintf("%dx%d", st.Width, st.Height)
				}
			}
			got = append(got, m[1]+"x"+m[2]+"="+size)
		}
		if strings.Join(got, " ") != "1920x1080=1920x1080 1280x720=1280x720 854x480=854x480" {
			t.Errorf("hls-ladder renditions (master's RESOLUTION=segment's size): %v\n%s", got, master)
		}
	case "thumbnail-sprite":
		pr := ffprobe(t, files["sprite.jpg"])
		if len(pr.Streams) != 1 || pr.Streams[0].Width != 160 || pr.Streams[0].Height != 90 {
			t.Fatalf("sprite.jpg %+v, want 2x2 tiles of 80x45", pr)
		}
		q := url.Values{}
		for name, raw := range pj.Params.Preset.Variables {
			q.Set(name, string(raw))
		}
		r := c.do(http.MethodGet, "/presets/thumbnail-sprite/index.vtt?"+q.Encode(), nil, nil)
		cues := regexp.MustCompile(`(\d\d:\d\d:\d\d\.\d{3}) --> (\d\d:\d\d:\d\d\.\d{3})\nsprite\.jpg#xywh=(\d+),(\d+),(\d+),(\d+)`).FindAllStringSubmatch(string(r.Body), -1)
		if r.Status != http.StatusOK || !strings.HasPrefix(string(r.Body), "WEBVTT\n") || len(cues) != 4 {
			t.Fatalf("sprite index: %d %s", r.Status, r.Body)
		}
		for i, cue := range cues {
			x, _ := strconv.Atoi(cue[3])
			y, _ := strconv.Atoi(cue[4])
			w, _ := strconv.Atoi(cue[5])
			h, _ := strconv.Atoi(cue[6])
			if w != 80 || h != 45 || x+w > 160 || y+h > 90 || cue[1] != fmt.Sprintf("00:00:%02d.000", i) {
				t.Errorf("sprite index cue %d %q lies outside the 160x90 sprite or out of order", i, cue[0])
			}
		}
	case "gif-preview":
		out, err := exec.Command("ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
			"-show_entries", "stream=nb_read_frames,width,height", "-of", "csv=p=0", files["preview.gif"]).Output()
		if err != nil || strings.TrimSpace(string(out)) != "64,36,5" {
			t.Errorf("preview.gif: %q %v, want 64x36 and 5 frames", out, err)
		}
	case "loudness-r128":
		out, err := exec.Command("ffmpeg", "-hide_banner", "-nostats", "-i", files["out.m4a"], "-af", "ebur128", "-f", "null", "-").CombinedOutput()
		m := regexp.MustCompile(`Summary:[\s\S]*?I:\s+(-?[\d.]+) LUFS`).FindSubmatch(out)
		if err != nil || m == nil {
			t.Fatalf("ebur128 of out.m4a: %v\n%s", err, tail(string(out), 600))
		}
		i, _ := strconv.ParseFloat(string(m[1]), 64)
		if math.Abs(i-(-16)) > 1 {
			t.Errorf("loudness-r128 to -16 LUFS: out.m4a measures %v LUFS", i)
		}
		t.Logf("loudness-r128 to -16 LUFS: out.m4a measures %v LUFS", i)
	default:
		t.Fatalf("no check for preset %s", preset)
	}
}
