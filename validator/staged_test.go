package validator

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func stagedSet(names ...string) func(string) bool {
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	return func(n string) bool { return set[n] }
}

const hlsToHost = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n/etc/passwd\n#EXT-X-ENDLIST\n"

func TestSniffList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		head string
		want ListKind
	}{
		{"hls", hlsToHost, HLSPlaylist},
		{"hls after a BOM and blank lines", "\xef\xbb\xbf\n\n#EXTM3U\nx.ts\n", HLSPlaylist},
		{"concat header", "ffconcat version 1.0\nfile a.mp4\n", ConcatScript},
		{"headerless concat is not probed", "file 'a.mp4'\n", NotList},
		{"dash", `<?xml version="1.0"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011">`, DASHManifest},
		{"dash, any case", `<mpd profiles="urn:mpeg:dash:profile:isoff-live:2011">`, DASHManifest},
		{"sdp", "v=0\no=- 0 0 IN IP4 127.0.0.1\nc=IN IP4 10.0.0.1\nm=video 5004 RTP/AVP 96\n", SDPSession},
		{"sdp with CRLF", "v=0\r\nc=IN IP4 10.0.0.1\r\n", SDPSession},
		{"imf", `<?xml version="1.0"?><CompositionPlaylist><ContentTitle>x</ContentTitle>`, IMFComposition},
		{"srt", "1\n00:00:00,000 --> 00:00:01,000\nhello\n", NotList},
		{"webvtt", "WEBVTT\n\n00:00.000 --> 00:01.000\nhi\n", NotList},
		{"mp4 head", "\x00\x00\x00\x20ftypisom\x00\x00\x02\x00<MPD", NotList},
		{"signature after a NUL is not probed", "text\x00#EXTM3U\nc=IN IP4 1.2.3.4\n", NotList},
		{"empty", "", NotList},
	}
	for _, tc := range tests {
		if got := SniffList([]byte(tc.head)); got != tc.want {
			t.Errorf("%s: SniffList = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDemuxer(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"in.mp4": "mov", "IN.MOV": "mov", "a.mkv": "matroska", "a.webm": "matroska", "a.ts": "mpegts",
		"a.srt": "srt", "a.vtt": "webvtt", "a.ass": "ass", "img%03d.png": "image2", "a.jpg": "image2",
		"a.flv": "flv", "a.nut": "nut", "a.mka": "matroska", "l.ffconcat": "concat", "a.y4m": "yuv4mpegpipe",
		"list.txt": "", "input_3": "", "a.m3u8": "", "a.": "", "a.xyz": "", "dir.mp4/x": "",
	} {
		if got := Demuxer(name); got != want {
			t.Errorf("Demuxer(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestPinDemuxers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args string
		want string
	}{
		{"one input", "-i in.mp4 -vf scale=640:-2 out.mp4", "-f mov -i in.mp4 -vf scale=640:-2 out.mp4"},
		{"options before -i stay", "-ss 1 -t 2 -i in.mkv out.mp4", "-ss 1 -t 2 -f matroska -i in.mkv out.mp4"},
		{"two inputs", "-i a.mp4 -i s.srt -c copy -c:s mov_text out.mp4", "-f mov -i a.mp4 -f srt -i s.srt -c copy -c:s mov_text out.mp4"},
		{"the user's -f wins", "-f concat -safe 1 -i list.txt -c copy out.mp4", "-f concat -safe 1 -i list.txt -c copy out.mp4"},
		{"-f of an output does not count", "-f lavfi -i testsrc -f mp4 x.mp4 -i b.mp4 y.mp4", "-f lavfi -i testsrc -f mp4 x.mp4 -f mov -i b.mp4 y.mp4"},
		{"lavfi untouched", "-f lavfi -i testsrc=d=1 out.mp4", "-f lavfi -i testsrc=d=1 out.mp4"},
		{"image sequence", "-framerate 10 -i img%03d.png out.mp4", "-framerate 10 -f image2 -i img%03d.png out.mp4"},
		{"looped image", "-loop 1 -i a.png -t 2 out.mp4", "-loop 1 -f image2 -i a.png -t 2 out.mp4"},
		{"unknown extension left to the probe", "-i input_0 out.mp4", "-i input_0 out.mp4"},
		{"disguised playlist read as subtitles", "-i m.srt out.srt", "-f srt -i m.srt out.srt"},
		{"an -f after the input applies to the output", "-i a.wav -f mp3 out.bin", "-f wav -i a.wav -f mp3 out.bin"},
	}
	for _, tc := range tests {
		args := strings.Fields(tc.args)
		orig := append([]string(nil), args...)
		got := PinDemuxers(args)
		if d := cmp.Diff(strings.Fields(tc.want), got); d != "" {
			t.Errorf("%s: PinDemuxers (-want +got):\n%s", tc.name, d)
		}
		if d := cmp.Diff(orig, args); d != "" {
			t.Errorf("%s: PinDemuxers modified its argument:\n%s", tc.name, d)
		}
	}
}

func TestCheckStaged(t *testing.T) {
	t.Parallel()
	staged := stagedSet("a.mp4", "b.mp4", "s.srt", "seg0.ts", "seg1.ts", "key.bin", "init.mp4", "v.m3u8", "inner.txt", "odd name.mp4")
	tests := []struct {
		name    string
		file    StagedFile
		wantErr string // "" accepts
	}{
		// Media and text under their own names.
		{"srt", StagedFile{Name: "s.srt", Content: []byte("1\n00:00:00,000 --> 00:00:01,000\nhi\n")}, ""},
		{"binary mp4", StagedFile{Name: "a.mp4", Content: []byte("\x00\x00\x00\x20ftypisom")}, ""},
		{"plain text file", StagedFile{Name: "notes.txt", Content: []byte("Hello: world\n")}, ""},

		// Disguised lists.
		{"playlist named .srt", StagedFile{Name: "m.srt", Content: []byte(hlsToHost)}, `input "m.srt" holds an HLS playlist, not what its name says`},
		{"playlist named .mp4", StagedFile{Name: "in.mp4", Content: []byte(hlsToHost)}, "HLS playlist"},
		{"concat list named .vtt", StagedFile{Name: "l.vtt", Content: []byte("ffconcat version 1.0\nfile /etc/passwd\n")}, `input "l.vtt" holds a concat list`},
		{"dash manifest named .mp4", StagedFile{Name: "a.mp4", Content: []byte("<MPD>")}, "DASH manifest"},
		{"sdp named .srt", StagedFile{Name: "x.srt", Content: []byte("v=0\nc=IN IP4 10.0.0.1\n")}, "SDP"},
		{"imf named .xml", StagedFile{Name: "cpl.xml", Content: []byte("<CompositionPlaylist>")}, "IMF"},
		{"mpd by name", StagedFile{Name: "x.mpd", Content: []byte("anything")}, "DASH manifest opens further files"},
		{"sdp by name", StagedFile{Name: "x.sdp", Content: []byte("")}, "SDP session"},

		// Concat lists under their own names.
		{"concat list", StagedFile{Name: "list.txt", Concat: true, Content: []byte("file 'a.mp4'\nfile b.mp4\n")}, ""},
		{"ffconcat with directives", StagedFile{Name: "l.ffconcat", Content: []byte(
			"ffconcat version 1.0\n# intro\nfile a.mp4\ninpoint 1.5\noutpoint 3\nduration 1.5\n\n  file 'odd name.mp4'\nfile_packet_metadata k=v\nstream\nexact_stream_id 0x101\n")}, ""},
		{"escaped space", StagedFile{Name: "list.txt", Concat: true, Content: []byte(`file odd\ name.mp4`)}, ""},
		{"txt with a header is checked even without -f concat", StagedFile{Name: "l.txt", Content: []byte("ffconcat version 1.0\nfile /etc/passwd\n")}, "absolute path"},
		{"-f concat on a .vtt", StagedFile{Name: "l.vtt", Concat: true, Content: []byte("file a.mp4\n")}, "must be named .txt or .ffconcat"},
		{"absolute path", StagedFile{Name: "list.txt", Concat: true, Content: []byte("file '/etc/passwd'\n")}, `list.txt line 1: entry "/etc/passwd" is an absolute path`},
		{"traversal", StagedFile{Name: "list.txt", Concat: true, Content: []byte("file a.mp4\nfile '../../x.mp4'\n")}, "line 2: entry \"../../x.mp4\" goes up a directory"},
		{"protocol", StagedFile{Name: "list.txt", Concat: true, Content: []byte("file 'file:a.mp4'\n")}, "names a protocol"},
		{"nested protocol", StagedFile{Name: "list.txt", Concat: true, Content: []byte("file subfile,,start,0,end,0,,:a.mp4\n")}, "names a protocol"},
		{"http", StagedFile{Name: "list.txt", Concat: true, Content: []byte("file https://example.com/a.mp4\n")}, "names a protocol"},
		{"subdirectory", StagedFile{Name: "list.txt", Concat: true, Content: []byte("file d/a.mp4\n")}, "not a bare file name"},
		{"not staged", StagedFile{Name: "list.txt", Concat: true, Content: []byte("file c.mp4\n")}, `entry "c.mp4" is not a staged input`},
		{"option directive", StagedFile{Name: "list.txt", Concat: true, Content: []byte("file a.mp4\noption protocol_whitelist file,http\n")}, `directive "option" is not allowed`},
		{"unknown directive", StagedFile{Name: "list.txt", Concat: true, Content: []byte("include x\n")}, `directive "include"`},
		{"file without a name", StagedFile{Name: "list.txt", Concat: true, Content: []byte("file\n")}, "file takes 1 argument(s), not 0"},
		{"trailing garbage", StagedFile{Name: "list.txt", Concat: true, Content: []byte("file a.mp4 b.mp4\n")}, "not 2"},
		{"open quote", StagedFile{Name: "list.txt", Concat: true, Content: []byte("file 'a.mp4\n")}, "unterminated quote"},
		{"nested list", StagedFile{Name: "list.txt", Concat: true, Content: []byte("file inner.txt\n")}, "is itself a list"},
		{"NUL", StagedFile{Name: "list.txt", Concat: true, Content: []byte("file a.mp4\x00\n")}, "NUL"},
		{"too big", StagedFile{Name: "list.txt", Concat: true, Content: []byte(strings.Repeat("# x\n", MaxListBytes/4+1))}, "over 1048576 bytes"},

		// HLS playlists under their own names.
		{"playlist of staged segments", StagedFile{Name: "p.m3u8", Content: []byte(
			"#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=AES-128,URI=\"key.bin\",IV=0x1\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXTINF:2,\nseg0.ts\n#EXTINF:2,\nseg1.ts\n#EXT-X-ENDLIST\n")}, ""},
		{"master playlist", StagedFile{Name: "master.m3u8", Content: []byte("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n")}, ""},
		{"segment on the host", StagedFile{Name: "p.m3u8", Content: []byte(hlsToHost)}, `p.m3u8 line 4: entry "/etc/passwd" is an absolute path`},
		{"segment over the network", StagedFile{Name: "p.m3u8", Content: []byte("#EXTM3U\n#EXTINF:1,\nhttp://10.0.0.1/a.ts\n")}, "names a protocol"},
		{"key on the host", StagedFile{Name: "p.m3u8", Content: []byte("#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=\"/etc/ssl/private/k\"\n#EXTINF:1,\nseg0.ts\n")}, "absolute path"},
		{"map with traversal", StagedFile{Name: "p.m3u8", Content: []byte("#EXTM3U\n#EXT-X-MAP:BYTERANGE=\"1@0\",URI=\"../init.mp4\"\n")}, "goes up a directory"},
		{"media rendition not staged", StagedFile{Name: "p.m3u8", Content: []byte("#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",URI=\"audio.m3u8\"\n")}, "not a staged input"},
		{"open quote in a tag", StagedFile{Name: "p.m3u8", Content: []byte("#EXTM3U\n#EXT-X-MAP:URI=\"init.mp4\n")}, "unterminated quote"},
		// FFmpeg ends a line at a carriage return alone too: what follows one is an entry.
		{"playlist entry after a lone CR", StagedFile{Name: "p.m3u8", Content: []byte("#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:2.0,\r/tmp/secret.mp4\n#EXT-X-ENDLIST\n")}, `p.m3u8 line 4: entry "/tmp/secret.mp4" is an absolute path`},
		{"concat entry after a lone CR", StagedFile{Name: "list.txt", Concat: true, Content: []byte("ffconcat version 1.0\n#\rfile /tmp/secret.mp4\n")}, `list.txt line 3: entry "/tmp/secret.mp4" is an absolute path`},
		{"concat list with CRLF", StagedFile{Name: "list.txt", Concat: true, Content: []byte("file a.mp4\r\nfile b.mp4\r\n")}, ""},
		{"playlist with CRLF", StagedFile{Name: "p.m3u8", Content: []byte("#EXTM3U\r\n#EXTINF:2,\r\nseg0.ts\r\n")}, ""},
		{"concat content in a playlist name", StagedFile{Name: "p.m3u8", Content: []byte("ffconcat version 1.0\nfile a.mp4\n")}, "not a staged input"},
	}
	for _, tc := range tests {
		e := CheckStaged(tc.file, staged)
		switch {
		case tc.wantErr == "" && e != nil:
			t.Errorf("%s: refused: %s", tc.name, e.Message)
		case tc.wantErr != "" && e == nil:
			t.Errorf("%s: accepted, want an error containing %q", tc.name, tc.wantErr)
		case e != nil && (!strings.Contains(e.Message, tc.wantErr) || e.Layer != layerStaged || e.Value != tc.file.Name):
			t.Errorf("%s: error %+v, want layer %q, value %q and a message containing %q", tc.name, e, layerStaged, tc.file.Name, tc.wantErr)
		}
	}
}

// FuzzCheckStaged: the list checks never panic, and a list they accept names only staged
// inputs: no token of an accepted concat list's `file` lines and no URI line of an accepted
// playlist is an absolute path, a traversal or a protocol.
func FuzzCheckStaged(f *testing.F) {
	for _, s := range []string{
		"file a.mp4\n", "ffconcat version 1.0\nfile 'a.mp4'\n", "file '/etc/passwd'", `file a\ .mp4`,
		"file 'a'\\''b'", "option x y\n", hlsToHost, "#EXTM3U\n#EXT-X-KEY:URI=\"a.mp4\"\na.mp4\n",
		"#EXT-X-MAP:URI=\"a", "<MPD>", "c=IN IP4 1.1.1.1", "\xef\xbb\xbf#EXTM3U", "file 'a.mp4\n",
		"#EXTM3U\n#EXTINF:2.0,\r/tmp/x.mp4\n", "#\rfile /tmp/x.mp4\n",
	} {
		f.Add("list.txt", true, s)
		f.Add("p.m3u8", false, s)
		f.Add("x.srt", false, s)
	}
	staged := func(n string) bool { return n == "a.mp4" || n == "a b.mp4" || n == "seg.ts" }
	f.Fuzz(func(t *testing.T, name string, concat bool, content string) {
		e := CheckStaged(StagedFile{Name: name, Concat: concat, Content: []byte(content)}, staged)
		if e != nil {
			if e.Layer != layerStaged || e.Message == "" {
				t.Fatalf("error %+v", e)
			}
			return
		}
		if k := SniffList([]byte(content)); k != NotList && !NamedAsList(name) {
			t.Fatalf("%q holding %v accepted", name, k)
		}
		// FFmpeg's lines: ended by "\n", "\r\n" or a "\r" alone.
		lines := strings.FieldsFunc(content, func(r rune) bool { return r == '\r' || r == '\n' })
		if concat || strings.HasSuffix(strings.ToLower(name), ".ffconcat") {
			for _, line := range lines {
				words, ok := concatTokens(strings.TrimLeft(line, " \t\r\n"))
				if ok && len(words) == 2 && words[0] == "file" && !staged(words[1]) {
					t.Fatalf("accepted list entry %q", words[1])
				}
			}
		}
		if stagedExt(name) == "m3u8" {
			for _, line := range lines {
				if l := strings.TrimSpace(line); l != "" && l[0] != '#' && !staged(l) {
					t.Fatalf("accepted playlist entry %q", l)
				}
			}
		}
	})
}
