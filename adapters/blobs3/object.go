package blobs3

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

const (
	// firstWindow is the span of the first GET after an Open or a Seek: a Range request of a
	// player costs about this much, however large the blob.
	firstWindow = 256 << 10
	// maxWindow bounds the doubling of the span while reads go on in order: a whole download
	// of a gigabyte takes some twenty GETs.
	maxWindow = 64 << 20
)

// object is an open blob whose bytes are fetched by ranged GETs as they are read. Each GET
// spans a window from the read position; the window doubles while reads follow each other and
// starts small again after a Seek. Every GET is conditional on the ETag seen at Open, so a blob
// replaced while it is read fails the read instead of mixing two versions.
type object struct {
	// ctx is Open's: an io.Reader has no other way to receive one, and a blob lives no longer
	// than the request that opened it.
	ctx     context.Context
	store   *Store
	key     string
	size    int64
	modTime time.Time
	etag    string

	pos    int64         // where the next Read starts
	body   io.ReadCloser // the open GET's body, or nil
	at     int64         // the offset of body's next byte
	end    int64         // the offset just past body's last byte
	window int64
	closed bool
}

func (o *object) Size() int64        { return o.size }
func (o *object) ModTime() time.Time { return o.modTime }

func (o *object) Read(p []byte) (int, error) {
	if o.closed {
		return 0, fs.ErrClosed
	}
	if o.pos >= o.size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if o.body != nil && o.at != o.pos {
		o.drop() // a Seek moved away from the open GET
	}
	if o.body == nil {
		if err := o.get(); err != nil {
			return 0, err
		}
	}
	if rest := o.end - o.at; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := o.body.Read(p)
	o.at += int64(n)
	o.pos += int64(n)
	switch {
	case o.at == o.end:
		// Reading the body to its end (nothing is left but the EOF) lets the connection
		// serve the next GET.
		_, _ = io.Copy(io.Discard, o.body)
		o.drop()
		return n, nil
	case err == io.EOF:
		o.drop()
		return n, fmt.Errorf("blobs3: %s ended at byte %d of %d: %w", o.key, o.at, o.size, io.ErrUnexpectedEOF)
	case err != nil:
		o.drop()
		return n, fmt.Errorf("blobs3: read %s: %w", o.key, err)
	}
	return n, nil
}

// get opens a GET of the window at pos.
func (o *object) get() error {
	end := min(o.pos+o.window, o.size)
	in := &s3.GetObjectInput{
		Bucket: aws.String(o.store.bucket),
		Key:    aws.String(o.key),
		Range:  aws.String(fmt.Sprintf("bytes=%d-%d", o.pos, end-1)),
	}
	if o.etag != "" {
		in.IfMatch = aws.String(o.etag)
	}
	out, err := o.store.client.GetObject(o.ctx, in)
	switch {
	case statusOf(err) == http.StatusPreconditionFailed:
		return fmt.Errorf("blobs3: %s was replaced while it was read", o.key)
	case statusOf(err) == http.StatusNotFound:
		return fmt.Errorf("blobs3: %s was deleted while it was read", o.key)
	case err != nil:
		return fmt.Errorf("blobs3: read %s: %w", o.key, err)
	}
	// A server that ignored the Range would send the whole object from its start.
	if got := aws.ToInt64(out.ContentLength); got != end-o.pos {
		out.Body.Close()
		return fmt.Errorf("blobs3: read %s: asked for bytes %d-%d, the server sent %d bytes", o.key, o.pos, end-1, got)
	}
	o.body, o.at, o.end = out.Body, o.pos, end
	o.window = min(o.window*2, maxWindow)
	return nil
}

// drop closes the open GET, if any; the next one starts with a small window again unless it
// follows on.
func (o *object) drop() {
	if o.body == nil {
		return
	}
	o.body.Close()
	o.body = nil
	if o.at != o.pos {
		o.window = firstWindow
	}
}

func (o *object) Seek(offset int64, whence int) (int64, error) {
	if o.closed {
		return 0, fs.ErrClosed
	}
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = o.pos + offset
	case io.SeekEnd:
		abs = o.size + offset
	default:
		return 0, fmt.Errorf("blobs3: seek %s: whence %d is not io.SeekStart, io.SeekCurrent or io.SeekEnd", o.key, whence)
	}
	if abs < 0 {
		return 0, fmt.Errorf("blobs3: seek %s: offset %d is before the start", o.key, abs)
	}
	o.pos = abs
	return abs, nil
}

func (o *object) Close() error {
	o.drop()
	o.closed = true
	return nil
}
