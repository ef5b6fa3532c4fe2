package blobs3

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Config is where an S3 store keeps its blobs. ParseURL makes one from the operator's URL;
// Credentials, HTTPClient and Now are for callers that build one in code (tests, embedders).
type Config struct {
	// Bucket holds every blob.
	Bucket string
	// Prefix is put before every key: "" or a path ending in "/", so that several deployments
	// can share a bucket.
	Prefix string
	// Endpoint is the base URL of an S3-compatible server (MinIO, versitygw, Ceph, R2, ...);
	// empty means AWS S3 itself.
	Endpoint string
	// Region signs the requests. Empty: AWS_REGION, AWS_DEFAULT_REGION or the shared AWS
	// config; failing those, us-east-1 when Endpoint is set (what most S3-compatible servers
	// expect), and an error for AWS itself, where a wrong region answers only with redirects.
	Region string
	// PathStyle addresses the bucket in the path (http://host/bucket/key) rather than in the
	// host name (http://bucket.host/key), which self-hosted servers need without wildcard DNS.
	PathStyle bool
	// Credentials replaces the standard AWS chain (environment, shared files, web identity,
	// container and instance roles) when set.
	Credentials aws.CredentialsProvider
	// HTTPClient carries the requests, as it is (AWS_CA_BUNDLE is not added to it); nil is
	// the SDK's default client.
	HTTPClient *http.Client
	// Now is the clock presigned URLs are signed with; nil is time.Now. Tests set it to make a
	// URL that has already expired.
	Now func() time.Time
}

// ParseURL reads the blob store URL
//
//	s3://BUCKET?endpoint=URL&region=R&path_style=true&prefix=P
//
// where every parameter is optional. path_style defaults to true when endpoint is set and to
// false for AWS itself. Credentials never belong in the URL: they come from the standard AWS
// variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) or the rest of the
// AWS chain. An error names the part of the URL that is wrong.
func ParseURL(raw string) (Config, error) {
	var c Config
	u, err := url.Parse(raw)
	if err != nil {
		// The url.Error would quote the whole string, which may hold a secret typed by mistake.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return c, badURL("the URL does not parse: %v", err)
	}
	if u.Scheme != "s3" {
		return c, badURL("scheme %q: want s3://BUCKET", u.Scheme)
	}
	if u.User != nil {
		return c, badURL("user info: credentials are refused in the URL, which is logged and shown; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	if u.Opaque != "" {
		return c, badURL("bucket: want s3://BUCKET, with two slashes")
	}
	if err := checkBucket(u.Host); err != nil {
		return c, err
	}
	c.Bucket = u.Host
	if u.Path != "" && u.Path != "/" {
		return c, badURL("path %q: put a key prefix in prefix=, not in the path", u.Path)
	}
	if u.Fragment != "" {
		return c, badURL("fragment %q: an s3 URL has none", u.Fragment)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return c, badURL("query: %v", err)
	}
	known := []string{"endpoint", "region", "path_style", "prefix"}
	for name, values := range q {
		if !slices.Contains(known, name) {
			return c, badURL("parameter %q is unknown; the parameters are %s", name, strings.Join(known, ", "))
		}
		if len(values) > 1 {
			return c, badURL("parameter %s is given %d times", name, len(values))
		}
	}
	if q.Has("endpoint") {
		if c.Endpoint, err = parseEndpoint(q.Get("endpoint")); err != nil {
			return c, err
		}
		c.PathStyle = true
	}
	if q.Has("region") {
		r := q.Get("region")
		if r == "" || len(r) > 64 || strings.ContainsFunc(r, func(c rune) bool { return !isRegionChar(c) }) {
			return c, badURL("region %q: want a region name such as us-east-1 (letters, digits, '-' and '_')", r)
		}
		c.Region = r
	}
	if q.Has("path_style") {
		v, err := strconv.ParseBool(q.Get("path_style"))
		if err != nil {
			return c, badURL("path_style %q: want true or false", q.Get("path_style"))
		}
		c.PathStyle = v
	}
	if q.Has("prefix") {
		p := strings.TrimSuffix(q.Get("prefix"), "/")
		if p != "" && (strings.Contains(p, `\`) || !fs.ValidPath(p)) {
			return c, badURL("prefix %q: want a relative path of names such as prod/mediajobs, without '.', '..' or empty parts", q.Get("prefix"))
		}
		if p != "" {
			c.Prefix = p + "/"
		}
	}
	return c, nil
}

func badURL(format string, args ...any) error {
	return fmt.Errorf("blobs3: bad blob store URL: "+format, args...)
}

// checkBucket holds a name to S3's rules for new buckets, so that a typo is caught at start
// rather than as a signature or DNS error on the first upload.
func checkBucket(b string) error {
	if b == "" {
		return badURL("bucket: missing; want s3://BUCKET")
	}
	ok := len(b) >= 3 && len(b) <= 63 && isAlnum(rune(b[0])) && isAlnum(rune(b[len(b)-1])) && !strings.Contains(b, "..")
	for _, c := range b {
		ok = ok && (isAlnum(c) || c == '.' || c == '-')
	}
	if !ok {
		return badURL("bucket %q: a bucket name has 3 to 63 lowercase letters, digits, dots and hyphens, and starts and ends with a letter or digit", b)
	}
	return nil
}

func parseEndpoint(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "", badURL("endpoint %q: want the server's base URL, such as http://127.0.0.1:7070 or https://s3.example.com", raw)
	}
	if u.User != nil {
		return "", badURL("endpoint: credentials are refused in the URL; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", badURL("endpoint %q: want the server's base URL alone, without a path, query or fragment (the bucket goes after s3://)", raw)
	}
	return u.Scheme + "://" + u.Host, nil
}

func isAlnum(c rune) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

func isRegionChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}
