/** A list named on the command line: one of the config's, or a usage error that names the closest one. */
import { closest, type Config, type ListConfig } from '../config.js';
import { UsageError } from '../errors.js';

/** `No list named "ordrs" in the config (did you mean "orders"?); configured: orders, customers.` */
export function knownList(config: Pick<Config, 'lists'>, name: string): ListConfig {
  const list = config.lists.find((l) => l.name === name);
  if (list) return list;
  const names = config.lists.map((l) => l.name);
  const near = closest(name, names);
  throw new UsageError(
    `No list named "${name}" in the config${near ? ` (did you mean "${near}"?)` : ''}; configured: ${names.join(', ') || '(none)'}.`,
  );
}
