package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/service"
)

func init() {
	register(command{name: "credits", summary: "grant credits to an account or record a pack purchase (with the plan's bonus)", run: runCredits})
}

func runCredits(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	usage := "usage: mediajobs credits grant --account ID --amount N [--note TEXT] [--ref REF] [--data DIR]\n" +
		"       mediajobs credits purchase --account ID (--amount N | --pack NAME) [--ref REF] [--data DIR]\n" +
		"       mediajobs credits adjust --account ID --amount ±N --note TEXT [--ref REF] [--data DIR]"
	kinds := map[string]billing.Kind{"grant": billing.KindGrant, "purchase": billing.KindPurchase, "adjust": billing.KindAdjustment}
	if len(args) == 0 || kinds[args[0]] == "" {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	c := service.Credit{Kind: kinds[args[0]]}
	a, _, code := admin(ctx, "credits "+args[0], args[1:], stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&c.AccountID, "account", "", "account ID")
		fs.Int64Var(&c.Amount, "amount", 0, "credits")
		fs.StringVar(&c.Pack, "pack", "", "credit pack of the pricing (purchase)")
		fs.StringVar(&c.Note, "note", "", "note shown in the account's ledger")
		fs.StringVar(&c.Reference, "ref", "", "order or ticket reference: running again with the same one records nothing twice")
	})
	if a == nil {
		return code
	}
	defer a.Close()
	written, err := a.UC.Credits.AddCredits(ctx, c)
	if err != nil {
		fmt.Fprintf(stderr, "mediajobs credits %s: %v\n", args[0], err)
		return 1
	}
	bal, err := a.Store.Balance(ctx, c.AccountID)
	if err != nil {
		fmt.Fprintf(stderr, "mediajobs credits %s: %v\n", args[0], err)
		return 1
	}
	type entry struct {
		Kind   billing.Kind `json:"kind"`
		Amount int64        `json:"amount"`
		Note   string       `json:"note,omitempty"`
	}
	out := struct {
		AccountID string  `json:"accountId"`
		Entries   []entry `json:"entries"`
		Balance   int64   `json:"balance"`
	}{AccountID: c.AccountID, Entries: []entry{}, Balance: bal}
	for _, e := range written {
		out.Entries = append(out.Entries, entry{Kind: e.Kind, Amount: e.Amount, Note: e.Note})
	}
	printJSON(stdout, out)
	return 0
}
