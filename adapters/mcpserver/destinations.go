package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

const listDestinationsDescription = `List this account's destinations, as GET /destinations does: its own S3-compatible buckets (registered over REST, POST /destinations, or the CLI) that a job's outputs are copied to once it completes. Name one in submit_job's destination, {"id": "dst_...", "path": "{job_id}/{name}"}; the path template may use {job_id}, {name} (required), {ext}, {date} and {preset}. Secrets are never shown; the access key ID is masked. get_job's delivery says how the copy went.`

// ListDestinationsInput is the request of list_destinations: GET /destinations takes nothing.
type ListDestinationsInput struct{}

// DestinationRef is a job's destination, as submit_job and POST /jobs take it.
type DestinationRef struct {
	ID   string `json:"id" jsonschema:"one of your destinations (list_destinations), dst_..."`
	Path string `json:"path,omitempty" jsonschema:"the key of each output file under the destination's prefix: a template of {job_id}, {name} (required), {ext}, {date} (YYYY-MM-DD) and {preset}; default {job_id}/{name}"`
}

// DestinationList is the answer of list_destinations.
type DestinationList struct {
	Data []service.DestinationView `json:"data"`
}

func (h *Handler) addDestinationTools() {
	add(h, &mcp.Tool{Name: "list_destinations", Title: "List destinations", Description: listDestinationsDescription,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}}, h.listDestinations)
}

func (h *Handler) listDestinations(ctx context.Context, a account.Account, _ ListDestinationsInput) (DestinationList, string, error) {
	if h.uc.Destinations == nil {
		return DestinationList{}, "", problem.Reject(problem.CodeNotFound, "this server delivers to no destination")
	}
	ds, err := h.uc.Destinations.List(ctx, a)
	if err != nil {
		return DestinationList{}, "", err
	}
	out := DestinationList{Data: make([]service.DestinationView, len(ds))}
	names := make([]string, len(ds))
	for i, d := range ds {
		out.Data[i] = service.ViewDestination(d)
		names[i] = fmt.Sprintf("%s (%s, bucket %s)", d.ID, d.Name, d.Bucket)
	}
	if len(ds) == 0 {
		return out, "No destinations. Register one with POST /destinations or `mediajobs destinations add`.", nil
	}
	return out, fmt.Sprintf("%d destinations: %s. Name one in submit_job's destination.", len(ds), strings.Join(names, ", ")), nil
}

// deliverySummary says in a sentence how a job's copy to its destination stands; "" for a job
// without one.
func deliverySummary(d *service.JobDelivery) string {
	switch {
	case d == nil:
		return ""
	case d.Status == "delivered":
		return fmt.Sprintf(" Its %d file(s) were delivered to %s (delivery.files has each key).", len(d.Files), d.Destination)
	case d.Status == "failed" && d.Error != nil:
		return fmt.Sprintf(" Its delivery to %s failed: %s.", d.Destination, *d.Error)
	default:
		return fmt.Sprintf(" Its delivery to %s is %s.", d.Destination, d.Status)
	}
}
