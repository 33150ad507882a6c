/**
 * Shapes of what the platform sends and receives. Values on the wire are
 * strings in the platform's formats; IDs are strings (19-digit numbers beyond
 * JavaScript's safe integers).
 */

/** One list item as received: field name -> value (strings, or numbers for RowVersion). */
export type Item = Record<string, unknown>;

/**
 * A field's metadata from GET /lists/{appID}/{listID}/fields, with canonical
 * keys (`normalizeFields` in field-meta.ts reads other layouts). Which of
 * `Type` and `FieldType` holds the storage kind (Text, Bigint, Decimal,
 * Datetime, Bit, File...) and which the control (input, radio, checkbox,
 * datepicker, switch, input_number...) differs between platforms; either may
 * be absent. `column-types.ts` decides.
 */
export interface FieldMeta {
  FieldID?: string;
  /** The storage name (`Title`, `Text1`, `Bigint2`...): stable, what items are keyed by. */
  FieldName: string;
  /** What people call the field ("Status", "Amount"). */
  DisplayName?: string;
  InternalName?: string;
  Type?: string;
  FieldType?: string;
  DefaultValue?: unknown;
  /** For Datetime fields: { DateFormat: 'yyyy-MM-dd' | 'yyyy-MM-dd HH:mm:ss' } (object or JSON string). */
  Rules?: unknown;
  IsSort?: boolean;
  IsIndex?: boolean;
  IsSystem?: boolean;
  IsUnique?: boolean;
  [key: string]: unknown;
}

export interface ListDetails {
  AppID: string;
  ListID: string;
  Title: string;
  Description?: string;
  [key: string]: unknown;
}

/** An application, from GET /applications (discovery). */
export interface PlatformApplication {
  id: string;
  /** Title or Name; the ID when neither is sent. */
  title: string;
}

/** One list of an application, from GET /applications/{id}/lists (discovery). */
export interface PlatformListRef {
  appID: string;
  listID: string;
  title: string;
  description: string;
}

export interface PlatformUser {
  UserID: string;
  Name?: string;
  Email?: string;
  Account?: string;
  [key: string]: unknown;
}

/** Operator codes of the items/query filter `Type`. */
export const Operator = {
  Equal: 0,
  LessOrEqual: 1,
  GreaterOrEqual: 2,
  Greater: 3,
  Less: 4,
  NotEqual: 5,
  Null: 6,
  NotNull: 7,
  StartsWith: 8,
  In: 9,
  Contains: 10,
} as const;
export type OperatorName = keyof typeof Operator;
export type OperatorCode = (typeof Operator)[OperatorName];

export interface Filter {
  Field: string;
  Type: OperatorCode;
  Value: string;
  Pre?: 'and' | 'or';
  Child?: Filter[];
}

export interface Sort {
  Field: string;
  Desc: boolean;
}

export interface ItemQuery {
  Fields?: string[];
  Filters?: Filter[];
  Sorts?: Sort[];
  PageIndex?: number;
  PageSize?: number;
}

export interface Page<T = Item> {
  /** 1-based page index. */
  index: number;
  pageCount: number;
  totalCount: number;
  items: T[];
}
