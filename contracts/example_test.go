package contracts_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/mediajobs/mediajobs/contracts"
)

func ExampleResponseValidator_ValidateBody() {
	v, err := contracts.NewResponseValidator(context.Background())
	if err != nil {
		panic(err)
	}
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/jobs", nil)
	header := http.Header{"Content-Type": {"application/json"}}
	fmt.Println(v.ValidateBody(req, 201, header, []byte(`{"data":{"id":"job_a","status":"waiting"}}`)))
	fmt.Println(v.ValidateBody(req, 201, header, []byte(`{"data":{"id":"job_a","status":"queued"}}`)) != nil)
	// Output:
	// <nil>
	// true
}
