package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpBearer adds an API key to every request of the MCP client.
type mcpBearer struct {
	key  string
	next http.RoundTripper
}

func (b mcpBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// mcpConnect opens a session at {base_url}/mcp with the SDK's own client.
func mcpConnect(t *testing.T, s *server, key string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	c := mcp.NewClient(&mcp.Implementation{Name: "mediajobs-integration", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.Base + "/mcp",
		HTTPClient: &http.Client{Transport: mcpBearer{key: key, next: tr}}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// mcpResult is a tool's answer: its structured content decoded, its text, and isError.
type mcpResult struct {
	Structured json.RawMessage
	Text       string
	IsError    bool
}

type mcpToolError struct {
	Code              string `json:"code"`
	Message           string `json:"message"`
	RetryAfterSeconds int    `json:"retryAfterSeconds"`
}

func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args any) mcpResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	return mcpResult{Structured: b, Text: strings.Join(text, "\n"), IsError: res.IsError}
}

// mcpOK calls a tool that must succeed and decodes its structured content into out.
func mcpOK(t *testing.T, cs *mcp.ClientSession, name string, args, out any) {
	t.Helper()
	r := mcpCall(t, cs, name, args)
	if r.IsError {
		t.Fatalf("%s failed: %s", name, r.Text)
	}
	if err := json.Unmarshal(r.Structured, out); err != nil {
		t.Fatalf("%s: %s: %v", name, r.Structured, err)
	}
}

func mcpErr(t *testing.T, cs *mcp.ClientSession, name string, args any) mcpToolError {
	t.Helper()
	r := mcpCall(t, cs, name, args)
	var te mcpToolError
	if !r.IsError || json.Unmarshal(r.Structured, &te) != nil || te.Code == "" {
		t.Fatalf("%s: want a tool error with {code, message}, got %+v", name, r)
	}
	return te
}

func TestMCP(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{Backend: sqliteBackend})
	acct := createAccount(t, s, "free")
	cs, err := mcpConnect(t, s, acct.APIKey)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}

	t.Run("lists the tools", func(t *testing.T) {
		t.Parallel()
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, tool := range res.Tools {
			got[tool.Name] = tool.InputSchema != nil && tool.OutputSchema != nil
		}
		for _, name := range []string{"submit_job", "get_job", "list_jobs", "probe_media", "get_account", "upload_media", "validate_command"} {
			if !got[name] {
				t.Errorf("tool %s is missing or has no schemas: %v", name, got)
			}
		}
	})

	t.Run("submits an ffmpeg job and polls it to complete", func(t *testing.T) {
		t.Parallel()
		var sub created
		mcpOK(t, cs, "submit_job", map[string]any{"type": "ffmpeg", "params": map[string]any{
			"command": "ffmpeg -f lavfi -i testsrc=duration=1:size=160x120:rate=10 -pix_fmt yuv420p out.mp4"}}, &sub)
		if sub.Status != "waiting" {
			t.Fatalf("submit_job answered %+v", sub)
		}
		var j jobView
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(time.Second) { // a poll, as an agent polls get_job
			mcpOK(t, cs, "get_job", map[string]any{"id": sub.ID}, &j)
			if terminal[j.Status] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s still %s after 60 s", sub.ID, j.Status)
			}
		}
		if j.Status != "complete" || j.Output == nil || j.Output.File == nil || j.Output.File.Path != "out.mp4" {
			t.Fatalf("job ended %+v %s", j, errorText(j))
		}
		// The URL is the same signed link REST gives; it serves the file.
		if b := newClient(t, s, acct.APIKey).mustGet(j.Output.File.URL); len(b) == 0 {
			t.Error("the output URL served nothing")
		}
	})

	t.Run("a disallowed flag is a tool error naming it", func(t *testing.T) {
		t.Parallel()
		te := mcpErr(t, cs, "submit_job", map[string]any{"type": "ffmpeg", "params": map[string]any{
			"command": "ffmpeg -f lavfi -i testsrc -filter_script f.txt out.mp4"}})
		if te.Code != "VALIDATION_ERROR" || !strings.Contains(te.Message, "-filter_script") {
			t.Errorf("got %+v", te)
		}
	})

	t.Run("uploads and probes media", func(t *testing.T) {
		t.Parallel()
		var up struct {
			URL  string `json:"url"`
			Size int64  `json:"size"`
		}
		media := makeMedia(t, 1)
		mcpOK(t, cs, "upload_media", map[string]any{"content": base64.StdEncoding.EncodeToString(media), "name": "clip.mp4"}, &up)
		if !strings.HasPrefix(up.URL, s.Base+"/assets/") || up.Size != int64(len(media)) {
			t.Fatalf("upload_media answered %+v", up)
		}
		var probe struct {
			Status string `json:"status"`
			Data   *struct {
				Format     string `json:"format"`
				DurationMs int64  `json:"durationMs"`
				Streams    []struct {
					Type  string `json:"type"`
					Codec string `json:"codec"`
					Width int    `json:"width"`
				} `json:"streams"`
			} `json:"data"`
		}
		mcpOK(t, cs, "probe_media", map[string]any{"source": up.URL}, &probe)
		if probe.Status != "complete" || probe.Data == nil || probe.Data.Format == "" || len(probe.Data.Streams) != 1 ||
			probe.Data.Streams[0].Codec != "h264" || probe.Data.Streams[0].Width != 128 || probe.Data.DurationMs < 900 {
			t.Errorf("probe_media answered %s: %+v", probe.Status, *probe.Data)
		}
	})

	t.Run("a wrong key is refused", func(t *testing.T) {
		t.Parallel()
		if _, err := mcpConnect(t, s, "mj_wrong"); err == nil {
			t.Error("connected with a wrong key")
		}
		req, err := http.NewRequest(http.MethodPost, s.Base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer mj_wrong")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("got %d, WWW-Authenticate %q; want 401 with a Bearer challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	})
}
