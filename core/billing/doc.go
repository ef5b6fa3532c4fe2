// Package billing prices compute and keeps the credit ledger: plans and prices as data
// (Pricing, loaded from JSON), integer credit arithmetic, and the append-only Ledger port.
package billing
