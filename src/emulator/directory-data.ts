/**
 * The organization directory the emulator serves besides users: departments
 * (`GET /departments?parentId=0`, all of them), groups (`GET /groups`, paged)
 * with their members (`GET /groups/{id}/users`), and positions (`GET
 * /positions`). From the seed's `directory` when it has one (an endpoint whose
 * key is absent there answers HTTP 404, as on a platform without it), else
 * derived from the users.
 */
import { z } from 'zod';

/** A user of the emulated account, as `/users` serves it; the directory is derived from them. */
export interface User {
  UserID: string;
  Name: string;
  Email: string;
  Account: string;
  Photo: string;
  LineManager: string;
}

export interface Department {
  DepartmentID: string;
  Name: string;
  ParentID: string;
  Manager: string;
}

export interface Group {
  GroupID: string;
  Name: string;
  Description: string;
  /** UserIDs. */
  Members: string[];
}

export interface Position {
  PositionID: string;
  Name: string;
}

export interface Directory {
  departments?: Department[];
  groups?: Group[];
  positions?: Position[];
}

const id = z.string().regex(/^\d{1,19}$/, 'must be a string of up to 19 digits');
export const directorySchema = z.strictObject({
  departments: z
    .array(
      z.strictObject({ DepartmentID: id, Name: z.string().min(1), ParentID: z.string().default('0'), Manager: z.string().default('') }),
    )
    .optional(),
  groups: z
    .array(
      z.strictObject({
        GroupID: id,
        Name: z.string().min(1),
        Description: z.string().default(''),
        Members: z.array(z.string()).default([]),
      }),
    )
    .optional(),
  positions: z.array(z.strictObject({ PositionID: id, Name: z.string().min(1) })).optional(),
});

const DEPARTMENTS = ['Sales', 'Operations', 'Finance', 'Support', 'Engineering'];
const POSITIONS = ['Director', 'Manager', 'Specialist', 'Assistant'];

/** A small directory from the users: a root company, departments under it (managed by early users), groups of every third user. */
export function generateDirectory(users: readonly User[]): Directory {
  const root: Department = { DepartmentID: '100', Name: 'Company', ParentID: '0', Manager: users[1]?.UserID ?? users[0]!.UserID };
  const departments = [
    root,
    ...DEPARTMENTS.map((name, i) => ({
      DepartmentID: String(101 + i),
      Name: name,
      ParentID: root.DepartmentID,
      Manager: users[(i + 2) % users.length]!.UserID,
    })),
  ];
  const groups: Group[] = [
    { GroupID: '200', Name: 'Everyone', Description: 'all users', Members: users.map((u) => u.UserID) },
    {
      GroupID: '201',
      Name: 'Approvers',
      Description: 'approve orders',
      Members: users.filter((_u, i) => i % 3 === 1).map((u) => u.UserID),
    },
    { GroupID: '202', Name: 'Auditors', Description: '', Members: [] },
  ];
  const positions = POSITIONS.map((name, i) => ({ PositionID: String(300 + i), Name: name }));
  return { departments, groups, positions };
}
