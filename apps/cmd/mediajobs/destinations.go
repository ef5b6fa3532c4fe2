package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/mediajobs/mediajobs/contracts/client"
)

func init() {
	register(command{name: "destinations", summary: "register, list or remove the account's own buckets that jobs' outputs are delivered to", run: runDestinations})
}

const destinationsUsage = `usage: mediajobs destinations add --name NAME --endpoint URL --bucket BUCKET --region REGION
                                  --access-key-id ID [--prefix PREFIX] [--path-style]
       mediajobs destinations list [--json]
       mediajobs destinations remove ID

A destination is an S3-compatible bucket of the account's own (AWS S3, MinIO, R2, versitygw...)
that a job's outputs are copied to once it completes: mediajobs run --destination ID copies
there. add registers one: the service writes and deletes a small test object under the prefix
first, refusing credentials it cannot write with (naming them), a missing bucket or an
endpoint it cannot reach, and prints the destination, its ID first. The secret access key is
read from $MEDIAJOBS_DESTINATION_SECRET, else from the first line of stdin, never from a flag
(a flag shows in the process list); the service stores it encrypted and never shows it again.
list prints the account's destinations as a table (--json: the API's answer). remove deletes
one; a destination that jobs not yet delivered name is refused (CONFLICT). Every subcommand
takes --server and --key (MEDIAJOBS_SERVER, MEDIAJOBS_API_KEY).

Exit status: 0 done; 1 the service refused; 2 usage error.

Flags:
`

func runDestinations(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	sub, args, fs, r, ok := subcommandFlags("destinations", destinationsUsage, args, stderr)
	if !ok {
		return 2
	}
	var req client.DestinationRequest
	var prefix string
	var pathStyle, asJSON bool
	want := 0
	switch sub {
	case "add":
		fs.StringVar(&req.Name, "name", "", "the destination's `name`, for you")
		fs.StringVar(&req.Endpoint, "endpoint", "", "the S3 service's base `URL`, e.g. https://s3.eu-west-1.amazonaws.com")
		fs.StringVar(&req.Bucket, "bucket", "", "the `bucket`")
		fs.StringVar(&req.Region, "region", "", "the bucket's `region`, e.g. us-east-1")
		fs.StringVar(&req.AccessKeyID, "access-key-id", "", "the access key `ID` (its secret: $MEDIAJOBS_DESTINATION_SECRET or stdin)")
		fs.StringVar(&prefix, "prefix", "", "the key `prefix` every delivered file lands under")
		fs.BoolVar(&pathStyle, "path-style", false, "address the bucket in the path (MinIO, versitygw) rather than the host name")
	case "list":
		fs.BoolVar(&asJSON, "json", false, "print the API's answer, {data: [destination...]}")
	case "remove":
		want = 1
	default:
		return otherSubcommand("destinations", destinationsUsage, sub, fs, stderr)
	}
	positional, exit, ok := parseCommand(fs, args)
	if !ok {
		return exit
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "mediajobs destinations %s: "+format+"\n", append([]any{sub}, a...)...)
		return 2
	}
	if len(positional) != want {
		return usageErr("want %d argument(s), got %q", want, positional)
	}
	if sub == "add" {
		for _, f := range []struct{ flag, value string }{{"name", req.Name}, {"endpoint", req.Endpoint}, {"bucket", req.Bucket},
			{"region", req.Region}, {"access-key-id", req.AccessKeyID}} {
			if f.value == "" {
				return usageErr("--%s is required", f.flag)
			}
		}
		secret, err := destinationSecret(os.Stdin)
		if err != nil {
			return usageErr("%v", err)
		}
		req.SecretAccessKey = &secret
		if prefix != "" {
			req.Prefix = &prefix
		}
		if pathStyle {
			req.PathStyle = &pathStyle
		}
	}
	c, err := r.client()
	if err != nil {
		return usageErr("%v", err)
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "mediajobs destinations %s: %s\n", sub, apiErrorText(err))
		return 1
	}
	switch sub {
	case "add":
		resp, err := c.CreateDestinationWithResponse(ctx, req)
		if err == nil {
			err = client.ResponseError(resp.HTTPResponse, resp.Body)
		}
		if err == nil && resp.JSON201 == nil {
			err = notJSON(resp.HTTPResponse)
		}
		if err != nil {
			return fail(err)
		}
		fmt.Fprintln(stdout, resp.JSON201.Data.ID)
		printIndented(stdout, resp.JSON201.Data)
	case "list":
		resp, err := c.ListDestinationsWithResponse(ctx)
		if err == nil {
			err = client.ResponseError(resp.HTTPResponse, resp.Body)
		}
		if err == nil && resp.JSON200 == nil {
			err = notJSON(resp.HTTPResponse)
		}
		if err != nil {
			return fail(err)
		}
		if asJSON {
			fmt.Fprintf(stdout, "%s\n", strings.TrimSpace(string(resp.Body)))
			return 0
		}
		printDestinations(stdout, resp.JSON200.Data)
	case "remove":
		resp, err := c.DeleteDestinationWithResponse(ctx, positional[0])
		if err == nil {
			err = client.ResponseError(resp.HTTPResponse, resp.Body)
		}
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stderr, "destination %s removed\n", positional[0])
	}
	return 0
}

// destinationSecret is the secret access key: $MEDIAJOBS_DESTINATION_SECRET, else stdin's
// first line.
func destinationSecret(stdin io.Reader) (string, error) {
	if s := os.Getenv("MEDIAJOBS_DESTINATION_SECRET"); s != "" {
		return s, nil
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("reading the secret access key from stdin: %v", err)
	}
	if s := strings.TrimRight(line, "\r\n"); s != "" {
		return s, nil
	}
	return "", fmt.Errorf("no secret access key: set MEDIAJOBS_DESTINATION_SECRET or write it on stdin")
}

// printDestinations writes the destinations as a table.
func printDestinations(w io.Writer, ds []client.Destination) {
	if len(ds) == 0 {
		fmt.Fprintln(w, "no destinations")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tENDPOINT\tBUCKET\tPREFIX\tACCESS KEY")
	for _, d := range ds {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.Name, d.Endpoint, d.Bucket, d.Prefix, d.AccessKeyID)
	}
	_ = tw.Flush()
}
