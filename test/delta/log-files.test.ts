import { describe, expect, it } from 'vitest';
import {
  checkpointFileName,
  classifyLogFile,
  classifyLogKey,
  commitKey,
  padVersion,
  versionFileName,
} from '../../src/delta/log-files.js';

const V10 = '00000000000000000010';

describe('log file names', () => {
  it('pads versions to 20 digits', () => {
    expect(versionFileName(7)).toBe('00000000000000000007.json');
    expect(checkpointFileName(10)).toBe(`${V10}.checkpoint.parquet`);
    expect(commitKey(0)).toBe('_delta_log/00000000000000000000.json');
    expect(padVersion(Number.MAX_SAFE_INTEGER)).toBe('00009007199254740991');
    expect(() => padVersion(-1)).toThrow(RangeError);
    expect(() => padVersion(1.5)).toThrow(RangeError);
  });

  it('classifies commits, checkpoints, checksums and compactions', () => {
    expect(classifyLogFile(`${V10}.json`)).toEqual({
      kind: 'commit',
      version: 10,
      name: `${V10}.json`,
    });
    expect(classifyLogFile(`${V10}.checkpoint.parquet`)).toMatchObject({
      kind: 'checkpoint',
      version: 10,
    });
    expect(classifyLogFile(`${V10}.checkpoint.0000000002.0000000003.parquet`)).toMatchObject({
      kind: 'checkpoint-part',
      version: 10,
      part: 2,
      parts: 3,
    });
    expect(
      classifyLogFile(`${V10}.checkpoint.e8fa2696-9728-4e9c-b285-634743fdd4fb.parquet`),
    ).toMatchObject({
      kind: 'checkpoint-v2',
      uuid: 'e8fa2696-9728-4e9c-b285-634743fdd4fb',
      format: 'parquet',
    });
    expect(
      classifyLogFile(`${V10}.checkpoint.e8fa2696-9728-4e9c-b285-634743fdd4fb.json`),
    ).toMatchObject({ format: 'json' });
    expect(classifyLogFile(`${V10}.crc`)).toMatchObject({ kind: 'checksum', version: 10 });
    expect(classifyLogFile(`00000000000000000003.${V10}.compacted.json`)).toMatchObject({
      kind: 'compaction',
      from: 3,
      to: 10,
    });
    expect(classifyLogFile('_last_checkpoint')).toEqual({
      kind: 'last-checkpoint',
      name: '_last_checkpoint',
    });
  });

  it('ignores everything that is not an exact match', () => {
    const junk = [
      `.${V10}.json.crc`,
      `..${V10}.json.c6b312ca-665d-46ab-93a9-9f87ad2baa92.tmp.crc`,
      `.${V10}.crc.crc`,
      '._last_checkpoint.crc',
      '10.json', // not padded
      `${V10}.json.tmp`,
      `${V10}.JSON`,
      `0${V10}.json`, // 21 digits
      `${V10}.checkpoint.0000000003.0000000002.parquet`, // part beyond the count
      `${V10}.checkpoint.0000000000.0000000002.parquet`,
      `${V10}.checkpoint.1.2.parquet`,
      `${V10}.checkpoint.not-a-uuid.parquet`,
      `${V10}.00000000000000000003.compacted.json`, // from > to
      '.s3-optimization-0',
      '.tmp-0e4a1f0c-7a5c-4b8e-9a51-2d1f0b1c2d3e',
      '',
    ];
    for (const name of junk) expect(classifyLogFile(name), name).toBeNull();
  });

  it('ignores keys in subfolders of _delta_log and outside it', () => {
    expect(classifyLogKey(`_delta_log/${V10}.json`)).toMatchObject({ kind: 'commit' });
    expect(classifyLogKey(`_delta_log/.tmp/${V10}.json`)).toBeNull();
    expect(
      classifyLogKey(`_delta_log/_sidecars/${V10}.checkpoint.0000000001.0000000002.parquet`),
    ).toBeNull();
    expect(
      classifyLogKey(`_delta_log/_staged_commits/${V10}.e8fa2696-9728-4e9c-b285-634743fdd4fb.json`),
    ).toBeNull();
    expect(classifyLogKey(`_delta_log/_commits/${V10}.json`)).toBeNull();
    expect(classifyLogKey(`${V10}.json`)).toBeNull();
    expect(classifyLogKey(`x/_delta_log/${V10}.json`)).toBeNull();
  });
});
