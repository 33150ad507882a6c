/**
 * The names of the webhook tables, `listsync.webhook_subscriptions` and
 * `listsync.webhook_inbox`. Each table's SQL lives in its own module
 * (webhook-subscriptions.ts, webhook-inbox.ts); each joins the other's table
 * for its counts, so both import the names from here rather than from each
 * other (no import circle: test/import-graph.test.ts).
 */

export const SUBSCRIPTIONS_TABLE = 'listsync.webhook_subscriptions';
export const INBOX_TABLE = 'listsync.webhook_inbox';
