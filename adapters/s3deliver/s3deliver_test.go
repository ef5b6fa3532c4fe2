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
	"github.com/mediajobs/mediajobs/adapters/safehttp"
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
		{"refused connection", deadPort, nil, "cannot connect: the server refused the connection"},
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

// TestErrorsNameNoAddress: a destination's endpoint on a refused range is refused, at the check
// and at the connection, without saying what its host name resolved to (the messages reach the
// client: an address there is an oracle of the network behind the service), while the cause
// stays for the log.
func TestErrorsNameNoAddress(t *testing.T) {
	ctx := context.Background()
	policy := safehttp.Config{AllowHTTP: true}
	err := s3deliver.URLChecker{HTTP: policy}.CheckURL(ctx, "http://localhost:9000/")
	if err == nil || !errors.Is(err, safehttp.ErrBlockedAddress) {
		t.Fatalf("CheckURL = %v; want a refusal of the address", err)
	}
	d := s3deliver.Deliverer{HTTP: safehttp.NewClient(policy), Attempts: 1}
	target := destination.Target{Endpoint: "http://localhost:9000", Region: "us-east-1", Bucket: "b", PathStyle: true,
		AccessKeyID: "id", SecretAccessKey: "secret"}
	checkErr := d.Check(ctx, target, ".mediajobs-check")
	if checkErr == nil || !errors.Is(checkErr, safehttp.ErrBlockedAddress) || !strings.Contains(checkErr.Error(), "cannot connect") {
		t.Fatalf("Check = %v; want a refused connection", checkErr)
	}
	for _, e := range []error{err, checkErr} {
		if msg := e.Error(); strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, "::1") || !strings.Contains(msg, "refused (private, loopback or reserved) range") {
			t.Errorf("error %q: want the reason, without the address", msg)
		}
	}
}
