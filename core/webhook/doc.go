// Package webhook is the domain of webhooks: endpoints with their signing secrets and rotation,
// deliveries with their retry schedule and history, the HMAC signature of a delivery, and the
// Store port that keeps them.
package webhook
