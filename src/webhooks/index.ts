/** Webhooks: subscriptions (`listsync hooks`) and the receiver `serve` mounts at `/hooks/`. */
export {
  createHookReceiver,
  isJsonContentType,
  type HookHandler,
  type ItemEvent,
  type ReceiveOutcome,
  type ReceiverOptions,
  type RejectReason,
} from './receiver.js';
export {
  subscribe,
  listSubscriptions,
  callbackUrlFor,
  maskToken,
  newToken,
  parseHookType,
  DEFAULT_HOOK_RESOURCE,
  HOOKS_PATH,
  type Subscription,
  type SubscriptionSummary,
  type SubscribeOptions,
} from './subscribe.js';
export { earlyPullOnItemEvent, listsToPullFor, replayUnprocessedEvents } from './early-pull.js';
