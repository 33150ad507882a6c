/**
 * Building `items/query` requests with operator names instead of codes:
 *
 *   query({ zone: 'Asia/Shanghai' })
 *     .select('Title', 'Status', 'Modified')
 *     .where('Modified').gte(since)          // a Date or DateTime becomes 'YYYY-MM-DD' in the zone
 *     .where('Status').in(['Open', 'Held'])  // JSON-encoded array, as the platform wants
 *     .orderBy('Created')
 *     .pageSize(1000)
 *     .build();
 *
 * or a single filter: `where('Title').startsWith('INV-')`.
 *
 * Filter values are always strings on the wire: numbers and bigints as their
 * digits, booleans as "1"/"0" (switch fields), dates as calendar dates in the
 * platform's zone (the platform compares date filters by calendar date; pass a
 * string from platformDateTime() when a full date-time is meant).
 */
import { DateTime } from 'luxon';
import { type Instant, platformDate } from './dates.js';
import { ValidationError } from './platform-errors.js';
import { assertPageSize } from './paging.js';
import { type Filter, type ItemQuery, Operator, type OperatorCode, type OperatorName, type Sort } from './types.js';

export type FilterValue = string | number | bigint | boolean | Instant;

export interface ConditionOptions {
  /** The platform's time zone, needed when a JS Date is compared. */
  zone?: string;
  /** How this filter joins the previous ones. Default and. */
  pre?: 'and' | 'or';
}

type Digit = '0' | '1' | '2' | '3' | '4' | '5' | '6' | '7' | '8' | '9';
/**
 * A page size the compiler can check when it is a literal: 1000 passes, 5000
 * or 1.5 do not compile. Non-literal numbers are checked at run time.
 */
export type PageSize<N extends number> = number extends N
  ? N
  : `${N}` extends `${Digit}` | `${Exclude<Digit, '0'>}${Digit}` | `${Exclude<Digit, '0'>}${Digit}${Digit}` | '1000'
    ? N
    : never;

const where0 = { method: 'POST', path: '(query builder)' };

/** Formats a filter value as the string the platform compares. */
export function filterValue(value: FilterValue, zone?: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new ValidationError(`Filter value ${value} is not a finite number`, { ...where0 });
    return String(value);
  }
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'boolean') return value ? '1' : '0';
  if (value instanceof DateTime) return platformDate(value, zone ?? value.zoneName ?? 'UTC');
  if (value instanceof Date) {
    if (!zone) {
      throw new ValidationError(
        'A Date filter value needs the platform time zone: use where(field, { zone }) or query({ zone }), or pass a luxon DateTime or a YYYY-MM-DD string',
        { ...where0 },
      );
    }
    return platformDate(value, zone);
  }
  throw new ValidationError(`Unsupported filter value ${String(value)}`, { ...where0 });
}

/** The operators on one field; each ends the condition and hands its Filter to `finish`. */
export class Condition<R> {
  constructor(
    private readonly field: string,
    private readonly finish: (filter: Filter) => R,
    private readonly options: ConditionOptions = {},
  ) {
    if (!field || typeof field !== 'string') throw new ValidationError('A filter needs a field name', { ...where0 });
  }

  private make(op: OperatorName, value: string): R {
    const filter: Filter = { Field: this.field, Type: Operator[op] as OperatorCode, Value: value };
    if (this.options.pre) filter.Pre = this.options.pre;
    return this.finish(filter);
  }

  private v(value: FilterValue): string {
    return filterValue(value, this.options.zone);
  }

  eq(value: FilterValue): R {
    return this.make('Equal', this.v(value));
  }
  ne(value: FilterValue): R {
    return this.make('NotEqual', this.v(value));
  }
  lt(value: FilterValue): R {
    return this.make('Less', this.v(value));
  }
  lte(value: FilterValue): R {
    return this.make('LessOrEqual', this.v(value));
  }
  gt(value: FilterValue): R {
    return this.make('Greater', this.v(value));
  }
  gte(value: FilterValue): R {
    return this.make('GreaterOrEqual', this.v(value));
  }
  isNull(): R {
    return this.make('Null', '');
  }
  isNotNull(): R {
    return this.make('NotNull', '');
  }
  startsWith(prefix: string): R {
    return this.make('StartsWith', prefix);
  }
  contains(text: string): R {
    return this.make('Contains', text);
  }
  /** One of `values`; sent as a JSON-encoded array of strings. */
  in(values: readonly FilterValue[]): R {
    return this.make('In', JSON.stringify(values.map((x) => this.v(x))));
  }
}

/** A single filter: `where('Modified').gte('2026-01-01')`. */
export function where(field: string, options: ConditionOptions = {}): Condition<Filter> {
  return new Condition(field, (f) => f, options);
}

export function asc(field: string): Sort {
  return { Field: field, Desc: false };
}

export function desc(field: string): Sort {
  return { Field: field, Desc: true };
}

/** The operator code for a name, e.g. `operator('GreaterOrEqual') === 2`. */
export function operator(name: OperatorName): OperatorCode {
  return Operator[name];
}

export class QueryBuilder {
  private readonly fields: string[] = [];
  private readonly filters: Filter[] = [];
  private readonly sorts: Sort[] = [];
  private index: number | undefined;
  private size: number | undefined;

  constructor(private readonly options: { zone?: string } = {}) {}

  /** Fields to return (all when never called). */
  select(...fields: string[]): this {
    for (const f of fields) if (!this.fields.includes(f)) this.fields.push(f);
    return this;
  }

  /** A filter joined with and. */
  where(field: string): Condition<this> {
    return new Condition(field, (f) => this.filter(f), { zone: this.options.zone });
  }

  /** A filter joined with or (`Pre: "or"`). */
  orWhere(field: string): Condition<this> {
    return new Condition(field, (f) => this.filter(f), { zone: this.options.zone, pre: 'or' });
  }

  /** Adds ready-made filters (e.g. from `where()`), including nested `Child` groups. */
  filter(...filters: Filter[]): this {
    this.filters.push(...filters);
    return this;
  }

  orderBy(field: string, direction: 'asc' | 'desc' = 'asc'): this {
    this.sorts.push(direction === 'desc' ? desc(field) : asc(field));
    return this;
  }

  sort(...sorts: Sort[]): this {
    this.sorts.push(...sorts);
    return this;
  }

  /** 1-based page index. */
  page(index: number): this {
    if (!Number.isInteger(index) || index < 1)
      throw new ValidationError(`PageIndex must be an integer >= 1 (got ${String(index)})`, { ...where0 });
    this.index = index;
    return this;
  }

  /** 1..1000; a literal above 1000 does not compile, any other bad value throws ValidationError. */
  pageSize<N extends number>(size: N & PageSize<N>): this {
    this.size = assertPageSize(size, where0);
    return this;
  }

  build(): ItemQuery {
    const q: ItemQuery = {};
    if (this.fields.length > 0) q.Fields = [...this.fields];
    if (this.filters.length > 0) q.Filters = this.filters.map((f) => ({ ...f }));
    if (this.sorts.length > 0) q.Sorts = this.sorts.map((s) => ({ ...s }));
    if (this.index !== undefined) q.PageIndex = this.index;
    if (this.size !== undefined) q.PageSize = this.size;
    return q;
  }
}

export function query(options: { zone?: string } = {}): QueryBuilder {
  return new QueryBuilder(options);
}
