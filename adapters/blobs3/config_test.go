package blobs3_test

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mediajobs/mediajobs/adapters/blobs3"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url  string
		want blobs3.Config
	}{
		{"s3://media", blobs3.Config{Bucket: "media"}},
		{"s3://media/", blobs3.Config{Bucket: "media"}},
		{"S3://media", blobs3.Config{Bucket: "media"}}, // a scheme is case-insensitive
		{"s3://my.media-bucket-01?region=eu-west-3", blobs3.Config{Bucket: "my.media-bucket-01", Region: "eu-west-3"}},
		{"s3://media?endpoint=http://127.0.0.1:7070", blobs3.Config{Bucket: "media", Endpoint: "http://127.0.0.1:7070", PathStyle: true}},
		{"s3://media?endpoint=https://s3.example.com/&path_style=false&region=garage",
			blobs3.Config{Bucket: "media", Endpoint: "https://s3.example.com", Region: "garage"}},
		{"s3://media?endpoint=http%3A%2F%2F%5B%3A%3A1%5D%3A9000&path_style=1", blobs3.Config{Bucket: "media", Endpoint: "http://[::1]:9000", PathStyle: true}},
		{"s3://media?path_style=true", blobs3.Config{Bucket: "media", PathStyle: true}},
		{"s3://media?prefix=prod/mediajobs", blobs3.Config{Bucket: "media", Prefix: "prod/mediajobs/"}},
		{"s3://media?prefix=prod/", blobs3.Config{Bucket: "media", Prefix: "prod/"}},
		{"s3://media?prefix=", blobs3.Config{Bucket: "media"}},
	} {
		got, err := blobs3.ParseURL(tc.url)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tc.url, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(blobs3.Config{}, "Credentials", "HTTPClient", "Now")); diff != "" {
			t.Errorf("ParseURL(%q) (-want +got):\n%s", tc.url, diff)
		}
	}
}

// Each bad URL's error names the part that is wrong.
func TestParseURLRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url, part string
	}{
		{"", `scheme ""`},
		{"media", `scheme ""`},
		{"file:///var/blobs", `scheme "file"`},
		{"s3:media", "two slashes"},
		{"s3://", "bucket: missing"},
		{"s3:///key", "bucket: missing"},
		{"s3://Media", `bucket "Media"`},
		{"s3://my_bucket", `bucket "my_bucket"`},
		{"s3://ab", `bucket "ab"`},
		{"s3://-media", `bucket "-media"`},
		{"s3://media.", `bucket "media."`},
		{"s3://me..dia", `bucket "me..dia"`},
		{"s3://media:9000", `bucket "media:9000"`},
		{"s3://" + strings.Repeat("a", 64), "bucket"},
		{"s3://AKIA:secret@media", "user info"},
		{"s3://media/prod", `path "/prod"`},
		{"s3://media#x", `fragment "x"`},
		{"s3://media?region=us-east-1;x=1", "query"},
		{"s3://media?Region=us-east-1", `parameter "Region" is unknown`},
		{"s3://media?bucket=other", `parameter "bucket" is unknown`},
		{"s3://media?region=a&region=b", "parameter region is given 2 times"},
		{"s3://media?region=", `region ""`},
		{"s3://media?region=us%20east", `region "us east"`},
		{"s3://media?region=" + strings.Repeat("r", 65), "region"},
		{"s3://media?endpoint=", `endpoint ""`},
		{"s3://media?endpoint=127.0.0.1:7070", `endpoint "127.0.0.1:7070"`},
		{"s3://media?endpoint=ftp://host", `endpoint "ftp://host"`},
		{"s3://media?endpoint=http://", `endpoint "http://"`},
		{"s3://media?endpoint=http://host/media", `endpoint "http://host/media"`},
		{"s3://media?endpoint=http://host%3Fa=1", `endpoint "http://host?a=1"`},
		{"s3://media?endpoint=http://k:s@host", "endpoint: credentials"},
		{"s3://media?path_style=yes", `path_style "yes"`},
		{"s3://media?prefix=/abs", `prefix "/abs"`},
		{"s3://media?prefix=../up", `prefix "../up"`},
		{"s3://media?prefix=a//b", `prefix "a//b"`},
		{"s3://media?prefix=a/./b", `prefix "a/./b"`},
		{`s3://media?prefix=a\b`, `prefix "a\\b"`},
		{"s3://media\x7f", "does not parse"},
	} {
		_, err := blobs3.ParseURL(tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.part) {
			t.Errorf("ParseURL(%q): %v, want an error naming %s", tc.url, err, tc.part)
		}
	}
}

// A secret typed into the URL by mistake is not repeated in the error, which gets logged.
func TestParseURLKeepsSecretsOutOfErrors(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"s3://AKIA:hunter2@media", "s3://media?endpoint=http://k:hunter2@host", "s3://k:hunter2@me%zzdia"} {
		if _, err := blobs3.ParseURL(u); err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseURL(%q): %v", u, err)
		}
	}
}

// Whatever the string, ParseURL answers without panicking, and what it accepts is a usable
// configuration.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"s3://media", "s3://media?endpoint=http://127.0.0.1:7070&region=us-east-1&path_style=true&prefix=p/q",
		"s3://a:b@c", "s3://media?prefix=../x", "s3://media?endpoint=http://[::1]:9000", "s3:media", "%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := blobs3.ParseURL(raw)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "blobs3: bad blob store URL: ") {
				t.Fatalf("error %q lacks the prefix", err)
			}
			return
		}
		if len(c.Bucket) < 3 || len(c.Bucket) > 63 || strings.Trim(c.Bucket, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "" {
			t.Fatalf("accepted bucket %q", c.Bucket)
		}
		if c.Prefix != "" && (!strings.HasSuffix(c.Prefix, "/") || !fs.ValidPath(strings.TrimSuffix(c.Prefix, "/"))) {
			t.Fatalf("accepted prefix %q", c.Prefix)
		}
		if c.Endpoint != "" && !strings.HasPrefix(c.Endpoint, "http://") && !strings.HasPrefix(c.Endpoint, "https://") {
			t.Fatalf("accepted endpoint %q", c.Endpoint)
		}
	})
}
