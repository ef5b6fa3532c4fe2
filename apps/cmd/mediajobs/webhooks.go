package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/contracts/client"
)

func init() {
	register(command{name: "webhooks", summary: "check a saved webhook delivery's signature against a secret", run: runWebhooks})
}

const webhooksUsage = `usage: mediajobs webhooks verify --secret whsec_... --request FILE
       mediajobs webhooks verify --secret whsec_... --body FILE (--headers FILE | --header 'Name: value'...)

Checks that a delivery you saved was signed by the service, as a receiver must: the HMAC-SHA256
of "<X-Service-Timestamp>.<raw body>" under the endpoint's secret, in X-Service-Signature or,
during a secret rotation, X-Service-Signature-Previous (give both secrets with two --secret).

--request is the raw HTTP request as received (request line, headers, a blank line, the body).
--headers is the header lines ("Name: value", a request line first is skipped) or a JSON object
of them; --body is the raw body, byte for byte as received.

By default the timestamp must be within --tolerance of now, as a live receiver checks to stop
replays; --tolerance 0 checks the signature of an old delivery without its age.

Exit status: 0 the signature is valid; 1 it is not; 2 usage error.

Flags:
`

// secretFlags collect repeated --secret flags.
type secretFlags []string

func (s *secretFlags) String() string { return "" }

func (s *secretFlags) Set(v string) error {
	if v == "" {
		return errors.New("empty secret")
	}
	*s = append(*s, v)
	return nil
}

// headerFlags collect repeated --header 'Name: value' flags.
type headerFlags http.Header

func (h headerFlags) String() string { return "" }

func (h headerFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("%q: want 'Name: value'", v)
	}
	http.Header(h).Add(strings.TrimSpace(name), strings.TrimSpace(value))
	return nil
}

func runWebhooks(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "verify" {
		fmt.Fprint(stderr, webhooksUsage)
		return 2
	}
	fs := flag.NewFlagSet("mediajobs webhooks verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var secrets secretFlags
	fs.Var(&secrets, "secret", "the endpoint's signing `secret` (whsec_...); repeat for the old one during a rotation (MEDIAJOBS_WEBHOOK_SECRET)")
	requestFile := fs.String("request", "", "`file` holding the raw HTTP request as received")
	headersFile := fs.String("headers", "", "`file` holding the delivery's headers: 'Name: value' lines or a JSON object")
	bodyFile := fs.String("body", "", "`file` holding the raw body as received")
	extra := headerFlags{}
	fs.Var(extra, "header", "a delivery header, `'Name: value'`; repeatable")
	tolerance := fs.Duration("tolerance", client.DefaultWebhookTolerance, "how far X-Service-Timestamp may be from now; 0 skips the check")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), webhooksUsage)
		fs.PrintDefaults()
	}
	positional, exit, ok := parseCommand(fs, args[1:])
	if !ok {
		return exit
	}
	var err error
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "mediajobs webhooks verify: "+format+"\n", a...)
		return 2
	}
	if len(positional) > 0 {
		return usageErr("unexpected arguments %q", positional)
	}
	if len(secrets) == 0 {
		if s := os.Getenv("MEDIAJOBS_WEBHOOK_SECRET"); s != "" {
			secrets = append(secrets, s)
		} else {
			return usageErr("no secret: give --secret whsec_... or set MEDIAJOBS_WEBHOOK_SECRET")
		}
	}
	if *tolerance < 0 {
		return usageErr("--tolerance %s: want 0 or more", *tolerance)
	}

	var (
		header http.Header
		body   []byte
	)
	switch {
	case *requestFile != "" && (*headersFile != "" || *bodyFile != ""):
		return usageErr("--request holds the headers and the body: give it alone, or --headers and --body")
	case *requestFile != "":
		raw, err := os.ReadFile(*requestFile)
		if err != nil {
			return usageErr("--request: %v", err)
		}
		if header, body, err = parseRawRequest(raw); err != nil {
			return usageErr("--request %s: %v", *requestFile, err)
		}
	case *bodyFile != "":
		if body, err = os.ReadFile(*bodyFile); err != nil {
			return usageErr("--body: %v", err)
		}
		header = http.Header{}
		if *headersFile != "" {
			raw, err := os.ReadFile(*headersFile)
			if err != nil {
				return usageErr("--headers: %v", err)
			}
			if header, err = parseHeaders(raw); err != nil {
				return usageErr("--headers %s: %v", *headersFile, err)
			}
		}
	default:
		return usageErr("give the delivery: --request FILE, or --body FILE with --headers FILE or --header flags")
	}
	for k, vs := range extra {
		header[k] = vs
	}

	v := client.WebhookVerifier{Secrets: secrets, Tolerance: *tolerance}
	if *tolerance == 0 {
		// Checked at the delivery's own time: only the signature counts.
		if ts, err := strconv.ParseInt(header.Get("X-Service-Timestamp"), 10, 64); err == nil {
			v.Now = func() time.Time { return time.Unix(ts, 0) }
		}
	}
	if err := v.Verify(header, body); err != nil {
		fmt.Fprintf(stdout, "invalid: %s\n", verifyReason(err))
		return 1
	}
	event := header.Get("X-Service-Event")
	if event == "" {
		event = "delivery"
	}
	fmt.Fprintf(stdout, "valid: %s %s signed at %s\n", event, header.Get("X-Service-Delivery"), timestampText(header.Get("X-Service-Timestamp")))
	return 0
}

func verifyReason(err error) string {
	switch {
	case errors.Is(err, client.ErrNoSignature):
		return "the delivery has no X-Service-Signature header"
	case errors.Is(err, client.ErrSignatureTimestamp):
		return "X-Service-Timestamp is missing, or too far from now (--tolerance 0 checks an old delivery)"
	case errors.Is(err, client.ErrSignatureMismatch):
		return "no signature matches: another secret, or the body or timestamp was changed (compare the body byte for byte)"
	}
	return err.Error()
}

func timestampText(ts string) string {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ts
	}
	return time.Unix(sec, 0).UTC().Format(time.RFC3339)
}

// parseRawRequest reads a raw HTTP/1.x request as received: its headers and its body.
func parseRawRequest(raw []byte) (http.Header, []byte, error) {
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		return nil, nil, fmt.Errorf("not an HTTP request: %w", err)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("body: %w", err)
	}
	return req.Header, body, nil
}

// isRequestLine tells "POST /hooks HTTP/1.1" from a header line.
func isRequestLine(line string) bool {
	f := strings.Fields(line)
	return len(f) == 3 && strings.HasPrefix(f[2], "HTTP/") && !strings.HasSuffix(f[0], ":")
}

// parseHeaders reads saved headers: a JSON object of names to a value or a list of values, or
// "Name: value" lines (after an optional request line, up to the first blank line).
func parseHeaders(raw []byte) (http.Header, error) {
	trimmed := bytes.TrimSpace(raw)
	if bytes.HasPrefix(trimmed, []byte("{")) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &m); err != nil {
			return nil, fmt.Errorf("not a JSON object of headers: %w", err)
		}
		h := http.Header{}
		for k, v := range m {
			var one string
			var many []string
			switch {
			case json.Unmarshal(v, &one) == nil:
				h.Add(k, one)
			case json.Unmarshal(v, &many) == nil:
				for _, s := range many {
					h.Add(k, s)
				}
			default:
				return nil, fmt.Errorf("header %q: want a string or a list of strings", k)
			}
		}
		return h, nil
	}
	text := strings.ReplaceAll(string(trimmed), "\r\n", "\n")
	if first, rest, _ := strings.Cut(text, "\n"); isRequestLine(first) {
		text = rest
	}
	// textproto wants the header block to end with a blank line.
	r := textproto.NewReader(bufio.NewReader(strings.NewReader(text + "\n\n")))
	mh, err := r.ReadMIMEHeader()
	if err != nil {
		return nil, fmt.Errorf("not 'Name: value' header lines: %w", err)
	}
	return http.Header(mh), nil
}
