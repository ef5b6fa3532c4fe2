package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
)

// JSON-RPC error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
)

// jsonRPCErrors turns the plain-text refusals of the SDK's streamable handler (an unknown
// method, a body that is not JSON-RPC) into JSON-RPC error responses, so that a client's
// JSON-RPC layer can read them: an unknown method is a -32601 answer to its request (200, as
// the transport answers every request), a malformed body a 400 carrying -32700 or -32600.
func jsonRPCErrors(next http.Handler, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			writeRPCError(w, http.StatusBadRequest, nil, rpcInvalidRequest, "the request body could not be read")
			return
		}
		// The SDK's JSON decoder takes what encoding/json refuses (data after the message), and
		// budget counts the tools/call messages with the SDK's own decoder over the JSON
		// encoding/json reads: a body the two could read apart never reaches either. One over
		// the limit is the SDK's to refuse (413).
		if int64(len(body)) <= maxBody && !json.Valid(body) {
			writeRPCError(w, http.StatusBadRequest, nil, rpcParseError, "the body is not one JSON value")
			return
		}
		// As REST: a string the decoder would store with U+FFFD in it is refused.
		if err := jobtype.CheckUnicode(body); err != nil {
			writeRPCError(w, http.StatusBadRequest, nil, rpcParseError, err.Error())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		cw := &catchWriter{ResponseWriter: w}
		next.ServeHTTP(cw, r)
		if !cw.caught {
			return
		}
		msg := strings.TrimSpace(cw.buf.String())
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		switch {
		case cw.status == http.StatusRequestEntityTooLarge:
			writeRPCError(w, cw.status, nil, rpcInvalidRequest, msg)
		case json.Unmarshal(body, &req) != nil:
			writeRPCError(w, http.StatusBadRequest, nil, rpcParseError, "the body is not JSON-RPC 2.0: "+msg)
		case strings.Contains(msg, "not handled") && req.Method != "" && len(req.ID) > 0:
			writeRPCError(w, http.StatusOK, req.ID, rpcMethodNotFound, "method \""+req.Method+"\" not found")
		default:
			writeRPCError(w, cw.status, req.ID, rpcInvalidRequest, msg)
		}
	})
}

func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, message string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// catchWriter holds back an error answered in plain text; anything else passes through.
type catchWriter struct {
	http.ResponseWriter
	caught  bool
	written bool
	status  int
	buf     bytes.Buffer
}

func (c *catchWriter) WriteHeader(status int) {
	if c.written {
		return
	}
	c.written = true
	if status >= 400 && strings.HasPrefix(c.Header().Get("Content-Type"), "text/plain") {
		c.caught, c.status = true, status
		return
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *catchWriter) Write(b []byte) (int, error) {
	if !c.written {
		c.WriteHeader(http.StatusOK)
	}
	if c.caught {
		return c.buf.Write(b)
	}
	return c.ResponseWriter.Write(b)
}

// Flush passes on the event stream's flushes.
func (c *catchWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok && !c.caught {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (c *catchWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// argumentErrors gives the SDK's own refusals of a tool call's arguments (they break the
// tool's input schema, checked before the tool runs) the form of every other tool error:
// VALIDATION_ERROR, as `CODE: message` text and as structured content.
func argumentErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		r, ok := res.(*mcp.CallToolResult)
		if err != nil || !ok || !r.IsError || r.StructuredContent != nil {
			return res, err
		}
		var parts []string
		for _, c := range r.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		te := ToolError{Code: problem.CodeValidation, Message: argumentMessage(strings.Join(parts, " "))}
		return &mcp.CallToolResult{IsError: true, StructuredContent: te,
			Content: []mcp.Content{&mcp.TextContent{Text: string(te.Code) + ": " + te.Message}}}, nil
	}
}

// schemaPath finds "validating /properties/<name>: " in a schema validator's message.
var schemaPath = regexp.MustCompile(`validating /properties/([^:/]+)(?:/[^:]*)?: `)

// argumentMessage rewrites the schema validator's message so that it names the argument:
// `validating "arguments": validating root: validating /properties/id: type: 5 has type
// "integer", want "string"` becomes `arguments.id: type: 5 has type "integer", want "string"`.
func argumentMessage(s string) string {
	s = strings.TrimPrefix(s, `validating "arguments": `)
	s = strings.TrimPrefix(s, "validating root: ")
	if m := schemaPath.FindStringSubmatchIndex(s); m != nil {
		return "arguments." + s[m[2]:m[3]] + ": " + s[m[1]:]
	}
	return "arguments: " + s
}
