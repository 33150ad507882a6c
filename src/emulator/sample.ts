import { DATE_FORMAT, DATE_TIME_FORMAT, type FieldMeta, type FieldSpec, isDateTimeRules, userFieldMeta } from './field-types.js';
import { snowflakeId, userIdFor } from './ids.js';
import { SECONDS_PER_DAY, formatDay, formatNaive, type PlatformZone } from './platform-time.js';
import { Prng, deriveSeed } from './prng.js';
import { ListData, type User } from './store.js';

/**
 * The built-in sample (app `demo`, list `orders`, a users directory) and the
 * deterministic generator behind it and behind a seed file's `generate`.
 * Everything derives from the seed number and the reference instant, so the
 * same options give byte-identical data.
 */

export const SAMPLE_APP_ID = 'demo';
export const SAMPLE_LIST_ID = 'orders';
export const SAMPLE_LIST_TITLE = 'Orders';
export const SAMPLE_DEFAULT_ITEMS = 5000;
export const SAMPLE_USER_COUNT = 50;
export const SAMPLE_STATUSES = ['New', 'Paid', 'Shipped', 'Cancelled'] as const;
export const SAMPLE_TAGS = ['priority', 'gift', 'wholesale', 'export', 'repeat'] as const;
/** Generated items are spread over this many days before the reference instant. */
export const GENERATED_SPAN_DAYS = 400;

const DAY_MS = 86_400_000;

const FIRST_NAMES = [
  'Anna',
  'Ben',
  'Chloe',
  'David',
  'Emma',
  'Felix',
  'Grace',
  'Hugo',
  'Ines',
  'Jonas',
  'Kira',
  'Leon',
  'Mia',
  'Noah',
  'Olivia',
  'Paul',
  'Quinn',
  'Rosa',
  'Sam',
  'Tara',
  'Uma',
  'Victor',
  'Wen',
  'Xavier',
  'Yara',
  'Zoe',
];
const LAST_NAMES = [
  'Becker',
  'Costa',
  'Dubois',
  'Eriksen',
  'Fischer',
  'Garcia',
  'Hansen',
  'Ito',
  'Jansen',
  'Kowalski',
  'Larsen',
  'Meyer',
  'Nowak',
  'Okafor',
  'Petrov',
  'Rossi',
  'Schmidt',
  'Tanaka',
  'Vogel',
  'Weber',
];

/** `count` users; the first is the integration user the API key acts as. */
export function generateUsers(count: number, seedNumber: number): User[] {
  const prng = new Prng(deriveSeed(seedNumber, 'users'));
  const users: User[] = [];
  const used = new Set<string>();
  for (let i = 0; i < count; i++) {
    const id = userIdFor(seedNumber, i);
    if (i === 0) {
      users.push({
        UserID: id,
        Name: 'API Integration',
        Email: 'integration@example.com',
        Account: 'api.integration',
        Photo: '',
        LineManager: '',
      });
      continue;
    }
    const first = prng.pick(FIRST_NAMES);
    const last = prng.pick(LAST_NAMES);
    let account = `${first}.${last}`.toLowerCase();
    for (let n = 2; used.has(account); n++) account = `${first}.${last}${n}`.toLowerCase();
    used.add(account);
    const manager = i <= 1 ? '' : (users[1 + Math.floor((i - 2) / 8)] as User).UserID;
    users.push({
      UserID: id,
      Name: `${first} ${last}`,
      Email: `${account}@example.com`,
      Account: account,
      Photo: prng.chance(0.7) ? `https://example.com/photos/${account}.png` : '',
      LineManager: manager,
    });
  }
  return users;
}

/**
 * The field definitions of the sample `orders` list (system fields are added
 * automatically). Fields are stored as the platform stores them: numbered
 * storage slots (`Text1`, `Bigint1`, `Datetime1`, `Bit1`, `File1`) whose
 * human name is the DisplayName.
 */
export function sampleFieldSpecs(): FieldSpec[] {
  return [
    { FieldName: 'Text1', DisplayName: 'Order No.', FieldType: 'Text', Type: 'input', IsIndex: true, IsUnique: true },
    { FieldName: 'Text2', DisplayName: 'Customer', FieldType: 'Text', Type: 'input' },
    {
      FieldName: 'Text3',
      DisplayName: 'Status',
      FieldType: 'Text',
      Type: 'radio',
      IsIndex: true,
      Rules: { Options: [...SAMPLE_STATUSES] },
    },
    { FieldName: 'Text4', DisplayName: 'Notes', FieldType: 'Text', Type: 'textarea' },
    { FieldName: 'Bigint1', DisplayName: 'Quantity', FieldType: 'Bigint', Type: 'input_number' },
    { FieldName: 'Decimal1', DisplayName: 'Amount', FieldType: 'Decimal', Type: 'input_number', Rules: { Precision: 2 } },
    { FieldName: 'Datetime1', DisplayName: 'Order date', FieldType: 'Datetime', Type: 'datepicker', Rules: { DateFormat: DATE_FORMAT } },
    {
      FieldName: 'Datetime2',
      DisplayName: 'Shipped at',
      FieldType: 'Datetime',
      Type: 'datepicker',
      Rules: { DateFormat: DATE_TIME_FORMAT },
    },
    { FieldName: 'Bit1', DisplayName: 'Paid', FieldType: 'Bit', Type: 'switch' },
    { FieldName: 'Text5', DisplayName: 'Tags', FieldType: 'Text', Type: 'checkbox', Rules: { Options: [...SAMPLE_TAGS] } },
    { FieldName: 'Text6', DisplayName: 'Owner', FieldType: 'Text', Type: 'lookup', Rules: { LookupType: 'user' } },
    { FieldName: 'Text7', DisplayName: 'Website', FieldType: 'Text', Type: 'hyperlink' },
    { FieldName: 'File1', DisplayName: 'Attachment', FieldType: 'File', Type: 'file-upload' },
  ];
}

/**
 * The sample list's storage slot per meaning, so code that edits the sample
 * (demo, tests, benchmarks) names fields by what they hold.
 */
export const SAMPLE_FIELDS = {
  orderNo: 'Text1',
  customer: 'Text2',
  status: 'Text3',
  notes: 'Text4',
  quantity: 'Bigint1',
  amount: 'Decimal1',
  orderDate: 'Datetime1',
  shippedAt: 'Datetime2',
  paid: 'Bit1',
  tags: 'Text5',
  owner: 'Text6',
  website: 'Text7',
  attachment: 'File1',
} as const;

const CUSTOMERS = [
  'Acme GmbH',
  'Globex Ltd',
  'Initech',
  'Umbrella Trading',
  'Stark Supplies',
  'Wayne Logistics',
  'Hooli',
  'Vandelay Imports',
  'Soylent Foods',
  'Tyrell Systems',
  'Cyberdyne Parts',
  'Wonka Sweets',
  'Oceanic Freight',
  'Gringotts Finance',
  'Monarch Paper',
  'Pied Piper',
  'Aperture Labs',
  'Black Mesa',
  'Nakatomi Trading',
  'Dunder Mifflin',
  'Sterling Cooper',
  'Prestige Worldwide',
  'Los Pollos',
  'Bluth Company',
  'Kramerica',
  'Oscorp',
  'Massive Dynamic',
  'Veridian Dynamics',
  'Rekall',
  'Virtucon',
  'Blue Sun',
  'Weyland Corp',
  'InGen',
  'Krusty Krab',
  'Planet Express',
  'Buy n Large',
  'Sirius Cybernetics',
  'Omni Consumer',
  'Zorg Industries',
  'Yoyodyne',
].map((name) => ({ name, website: `https://www.${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}.example.com` }));

const NOTES = [
  'Deliver to the back entrance.',
  'Customer asked for a call before delivery.',
  'Partial delivery accepted.',
  'Invoice to head office.',
  'Fragile: pack with extra care.',
  'Rush order — ship today if possible.',
  "Repeat of last month's order.",
  'Needs customs paperwork.',
  'Discount agreed by phone (5 %).',
  'Contact: "Jo" at reception, ext. 42',
  'Leave with the neighbour if nobody is home.',
  'Ünïcödé check: Grüße, 東京, emoji 📦',
];

const ATTACHMENT_NAMES = ['invoice', 'delivery-note', 'quote', 'packing-list', 'photo'];
const ATTACHMENT_EXTENSIONS = ['pdf', 'pdf', 'png', 'xlsx'];

/** An attachment value: a JSON-encoded array of `{id, name, fileSize}` objects (one or two). */
function attachmentValue(orderNo: string, prng: Prng): string {
  const count = 1 + prng.int(2);
  const files = Array.from({ length: count }, (_, k) => {
    const name = `${prng.pick(ATTACHMENT_NAMES)}-${orderNo}${k === 0 ? '' : `-${k + 1}`}.${prng.pick(ATTACHMENT_EXTENSIONS)}`;
    return { id: `att-${orderNo}-${k + 1}`, name, fileSize: 1024 + prng.int(2_000_000) };
  });
  return JSON.stringify(files);
}

const SMALL_INTS = Array.from({ length: 1001 }, (_, i) => String(i));

/** Every subset of up to 3 tags, as JSON strings (interned: shared by all items). */
const TAG_COMBOS: string[] = (() => {
  const out: string[] = [];
  const t = SAMPLE_TAGS;
  for (let a = 0; a < t.length; a++) {
    out.push(JSON.stringify([t[a]]));
    for (let b = a + 1; b < t.length; b++) {
      out.push(JSON.stringify([t[a], t[b]]));
      for (let c = b + 1; c < t.length; c++) out.push(JSON.stringify([t[a], t[b], t[c]]));
    }
  }
  return out;
})();

/** Per-row values aligned with `list.dataColumns`, written into `out`. */
export type RowFiller = (index: number, createdNaive: number, prng: Prng, out: string[]) => void;

export interface GenerateContext {
  zone: PlatformZone;
  users: readonly User[];
  referenceMs: number;
  /** Days before the reference instant that Created dates spread over. */
  spanDays: number;
}

/**
 * Appends `count` generated items: Created spread over the last
 * `ctx.spanDays` days before the reference instant in ascending order (so
 * IDs increase with Created), Modified >= Created, RowVersion matching the
 * number of edits.
 */
export function generateItems(list: ListData, count: number, prng: Prng, ctx: GenerateContext, fill: RowFiller, firstIndex = 0): void {
  if (count <= 0) return;
  list.reserve(count);
  const spanMs = ctx.spanDays * DAY_MS;
  const startMs = ctx.referenceMs - spanMs;
  const step = spanMs / count;
  const users = ctx.users;
  const zone = ctx.zone;
  const row: string[] = new Array<string>(list.dataColumns.length).fill('');
  let lastId = list.maxId;
  let lastMs = -1;
  let seq = 0;
  for (let i = 0; i < count; i++) {
    const createdMs = Math.min(ctx.referenceMs - 1000, Math.floor(startMs + i * step + prng.next() * step));
    seq = createdMs === lastMs ? seq + 1 : 0;
    lastMs = createdMs;
    let id = snowflakeId(createdMs, seq);
    if (id <= lastId) id = lastId + 1n;
    lastId = id;
    let version = 1;
    let modifiedMs = createdMs;
    if (prng.next() < 0.55) {
      version = 2 + prng.int(5);
      modifiedMs = createdMs + Math.floor(prng.next() * Math.min(ctx.referenceMs - 1000 - createdMs, 90 * DAY_MS));
    }
    const createdNaive = zone.naiveFromMs(createdMs);
    const createdBy = (users[prng.int(users.length)] as User).UserID;
    const modifiedBy = version === 1 ? createdBy : (users[prng.int(users.length)] as User).UserID;
    fill(firstIndex + i, createdNaive, prng, row);
    list.appendRow(
      { id, version, created: createdNaive, modified: Math.max(createdNaive, zone.naiveFromMs(modifiedMs)), createdBy, modifiedBy },
      row,
    );
  }
}

/** Builds the sample `demo/orders` list with `items` generated orders. */
export function buildSampleList(ctx: GenerateContext, items: number, seedNumber: number): ListData {
  const { zone, users, referenceMs, spanDays } = ctx;
  const list = new ListData({
    appID: SAMPLE_APP_ID,
    listID: SAMPLE_LIST_ID,
    title: SAMPLE_LIST_TITLE,
    description: 'Sample sales orders generated by the listsync emulator',
    createdNaive: zone.naiveFromMs(referenceMs - (spanDays + 1) * DAY_MS),
    createdBy: (users[0] as User).UserID,
  });
  for (const spec of sampleFieldSpecs()) list.addField(userFieldMeta(SAMPLE_APP_ID, SAMPLE_LIST_ID, spec));
  const refNaive = zone.naiveFromMs(referenceMs);
  const userIds = users.map((u) => u.UserID);
  // Attachments draw from their own sequence, so the other values stay those of earlier versions.
  const attachments = new Prng(deriveSeed(seedNumber, SAMPLE_APP_ID, SAMPLE_LIST_ID, 'attachments'));
  const fill: RowFiller = (i, createdNaive, prng, out) => {
    const orderNo = `SO-${String(i + 1).padStart(6, '0')}`;
    const customer = CUSTOMERS[prng.int(CUSTOMERS.length)] as (typeof CUSTOMERS)[number];
    const r = prng.next();
    const status = r < 0.05 ? 'Cancelled' : r < 0.2 ? 'New' : r < 0.45 ? 'Paid' : 'Shipped';
    const quantity = 1 + prng.int(40);
    const unitCents = 499 + prng.int(49_500);
    const shipped = status === 'Shipped';
    out[0] = `Order ${orderNo}`;
    out[1] = orderNo;
    out[2] = customer.name;
    out[3] = status;
    out[4] = prng.next() < 0.55 ? '' : (NOTES[prng.int(NOTES.length)] as string);
    out[5] = SMALL_INTS[quantity] as string;
    out[6] = ((quantity * unitCents) / 100).toFixed(2);
    out[7] = formatDay(Math.floor(createdNaive / SECONDS_PER_DAY));
    out[8] = shipped ? formatNaive(Math.min(createdNaive + 3600 * (4 + prng.int(236)), refNaive - 60)) : '';
    out[9] = status === 'Paid' || shipped ? '1' : '0';
    out[10] = prng.next() < 0.4 ? '' : (TAG_COMBOS[prng.int(TAG_COMBOS.length)] as string);
    out[11] = userIds[prng.int(userIds.length)] as string;
    out[12] = customer.website;
    out[13] = attachments.next() < 0.25 ? attachmentValue(orderNo, attachments) : '';
  };
  generateItems(list, items, new Prng(deriveSeed(seedNumber, SAMPLE_APP_ID, SAMPLE_LIST_ID)), ctx, fill);
  list.finishBulk();
  return list;
}

const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet', 'kilo', 'lima'];
const FLOW_STATES = ['Draft', 'Submitted', 'InApproval', 'Approved', 'Rejected'];
const DEFAULT_OPTIONS = ['Option A', 'Option B', 'Option C', 'Option D'];

function optionsOf(meta: FieldMeta): string[] {
  const o = meta.Rules['Options'];
  return Array.isArray(o) && o.length > 0 && o.every((x) => typeof x === 'string') ? (o as string[]) : DEFAULT_OPTIONS;
}

/** A plausible value generator for any field type (seed `generate`, simulated activity). */
export function valueGenerator(meta: FieldMeta, users: readonly User[]): (index: number, createdNaive: number, prng: Prng) => string {
  const label = meta.DisplayName || meta.FieldName;
  switch (`${meta.FieldType}/${meta.Type}`) {
    case 'Text/input':
      if (meta.FieldName === 'Title') return (i) => `Item ${i + 1}`;
      return (i, _c, prng) => `${prng.pick(WORDS)} ${label} ${i + 1}`;
    case 'Text/textarea':
      return (_i, _c, prng) => (prng.next() < 0.4 ? '' : (NOTES[prng.int(NOTES.length)] as string));
    case 'Text/radio': {
      const options = optionsOf(meta);
      return (_i, _c, prng) => prng.pick(options);
    }
    case 'Text/checkbox': {
      const options = optionsOf(meta);
      return (_i, _c, prng) => {
        const n = prng.int(Math.min(3, options.length) + 1);
        const chosen = new Set<string>();
        while (chosen.size < n) chosen.add(prng.pick(options));
        if (n === 0) return '';
        return JSON.stringify(options.filter((o) => chosen.has(o)));
      };
    }
    case 'Text/lookup':
      return (_i, _c, prng) => (users[prng.int(users.length)] as User).UserID;
    case 'Text/hyperlink':
      return (i, _c, prng) => `https://example.com/${prng.pick(WORDS)}/${i + 1}`;
    case 'Text/flowstatus':
      return (_i, _c, prng) => prng.pick(FLOW_STATES);
    case 'Datetime/datepicker':
      if (isDateTimeRules(meta.Rules)) return (_i, created, prng) => formatNaive(created + prng.int(30 * SECONDS_PER_DAY));
      return (_i, created, prng) => formatDay(Math.floor(created / SECONDS_PER_DAY) + prng.int(30) - 15);
    case 'Bit/switch':
      return (_i, _c, prng) => (prng.next() < 0.5 ? '1' : '0');
    case 'Bigint/input_number':
      return (_i, _c, prng) => SMALL_INTS[prng.int(1001)] as string;
    case 'Decimal/input_number':
      return (_i, _c, prng) => (prng.int(1_000_000) / 100).toFixed(2);
    case 'Text/select':
      return (_i, _c, prng) => prng.pick(optionsOf(meta));
    case 'Text/richtext':
      return (i, _c, prng) => `<p>${prng.pick(WORDS)} <b>${label}</b> ${i + 1}</p>`;
    case 'Decimal/currency':
      return (_i, _c, prng) => (prng.int(10_000_000) / 100).toFixed(2);
    case 'Decimal/percent':
      return (_i, _c, prng) => (prng.int(10_001) / 100).toFixed(2);
    case 'File/file-upload':
    case 'File/upload':
      return (i, _c, prng) => (prng.next() < 0.7 ? '' : attachmentValue(String(i + 1), prng));
    default:
      return (i) => `${label} ${i + 1}`;
  }
}

/** A RowFiller using `valueGenerator` for every data column of the list. */
export function genericRowFiller(list: ListData, users: readonly User[]): RowFiller {
  const gens = list.dataColumns.map((col) => valueGenerator(col.meta, users));
  return (i, created, prng, out) => {
    for (let c = 0; c < gens.length; c++)
      out[c] = (gens[c] as (index: number, createdNaive: number, prng: Prng) => string)(i, created, prng);
  };
}
