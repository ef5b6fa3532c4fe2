package s3deliver_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mediajobs/mediajobs/adapters/blobs3/s3test"
	"github.com/mediajobs/mediajobs/adapters/s3deliver"
	"github.com/mediajobs/mediajobs/core/destination"
)

func TestDeliverer(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	ctx := context.Background()
	good := destination.Target{Endpoint: srv.Endpoint, Bucket: srv.Bucket, Region: s3test.Region, PathStyle: true,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
	d := s3deliver.Deliverer{Attempts: 1}

	data := []byte("some output bytes")
	etag, err := d.Put(ctx, good, "media/job_1/out.bin", bytes.NewReader(data), int64(len(data)))
	if err != nil || etag == "" {
		t.Fatalf("Put = %q, %v", etag, err)
	}
	got, err := srv.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("media/job_1/out.bin")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if !bytes.Equal(b, data) || aws.ToString(got.ETag) != etag {
		t.Fatalf("stored %q with ETag %s; want %q with %s", b, aws.ToString(got.ETag), data, etag)
	}

	wrongSecret, noBucket, deadPort := good, good, good
	wrongSecret.SecretAccessKey = "not-the-secret"
	noBucket.Bucket = "no-such-bucket"
	deadPort.Endpoint = "http://127.0.0.1:1"
	tests := []struct {
		name    string
		target  destination.Target
		wantIs  error
		wantMsg string
	}{
		{"good", good, nil, ""},
		{"wrong secret", wrongSecret, destination.ErrCredentials, "refused the credentials"},
		{"no bucket", noBucket, destination.ErrNoBucket, "does not exist"},
		{"refused connection", deadPort, nil, "cannot connect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := d.Check(ctx, tt.target, ".mediajobs-check")
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("Check = %v", err)
				}
				return
			}
			if err == nil || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Check = %v; want %v containing %q", err, tt.wantIs, tt.wantMsg)
			}
			if strings.Contains(err.Error(), good.SecretAccessKey) || strings.Contains(err.Error(), wrongSecret.SecretAccessKey) {
				t.Fatalf("the error shows a secret: %v", err)
			}
		})
	}
	// The check leaves nothing behind.
	if _, err := srv.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(".mediajobs-check")}); err == nil {
		t.Fatal("the test object is still there")
	}
}
