/**
 * The response envelope `{Status, Data, Message}` (+ `TotalCount` on
 * collections), written as text so pages of items can be spliced in without a
 * second serialisation.
 */
export function envelopeJson(status: number, dataJson: string, message = '', totalCount?: number): string {
  const tail = totalCount === undefined ? '' : `,"TotalCount":${totalCount}`;
  return `{"Status":${status},"Data":${dataJson},"Message":${JSON.stringify(message)}${tail}}`;
}
