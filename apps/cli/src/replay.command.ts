// `tally replay`: rebuild every projection from the streams into empty tables.
export async function replay(_args: string[]): Promise<number> {
  process.stderr.write('tally replay: not wired yet\n');
  return 1;
}
