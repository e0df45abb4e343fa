-- Every node's reliability row (failures, drains, XID events, lemon rank).
SELECT * FROM node_reliability
