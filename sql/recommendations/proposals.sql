-- proposals: every recommendation ever proposed (the proposal record), to match later ledger changes to it.
SELECT id, rule, cluster, scope, patch_kind, patch_content, change_text, proposed_at, last_seen_at
FROM analytics.recommendation_proposals
