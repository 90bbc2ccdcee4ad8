package consume

import (
	"context"

	"github.com/queenbridge/queenbridge/internal/route"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// Routes lists the dead letters' HTTP routes, which the front door
// registers behind its guard: the list (GET /api/v1/dlq, Queen's, any
// token that may read) and the requeue (POST /api/v1/dlq/requeue, the web
// console's, admin tokens only). Over NATS the list is <prefix>.v1.dlq.
func (c *Consumer) Routes() []route.Route {
	return []route.Route{
		{Method: "GET", Pattern: "/api/v1/dlq", Serve: func(ctx context.Context, tenant tenancy.TenantID, req route.Request) (int, []byte) {
			dr, err := jsonapi.ParseDeadLettersQuery(req.Query.Get)
			if err != nil {
				return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
			}
			return c.ServeDeadLetters(ctx, tenant, dr)
		}},
		{Method: "POST", Pattern: "/api/v1/dlq/requeue", Admin: true, Serve: func(ctx context.Context, tenant tenancy.TenantID, req route.Request) (int, []byte) {
			r, err := jsonapi.DecodeRequeue(req.Body)
			if err != nil {
				return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
			}
			return c.ServeRequeue(ctx, tenant, r)
		}},
	}
}
