/**
 * Delta schemas (Spark StructType JSON) and their mapping to and from DuckDB types.
 */

export type PrimitiveType = string; // 'string' | 'long' | 'integer' | ... | 'decimal(p,s)'

export interface StructField {
  name: string;
  type: DataType;
  nullable: boolean;
  metadata: Record<string, unknown>;
}

export interface StructType {
  type: 'struct';
  fields: StructField[];
}

export interface ArrayType {
  type: 'array';
  elementType: DataType;
  containsNull: boolean;
}

export interface MapType {
  type: 'map';
  keyType: DataType;
  valueType: DataType;
  valueContainsNull: boolean;
}

export type DataType = PrimitiveType | StructType | ArrayType | MapType;

/** Parse `metaData.schemaString`. */
export function parseSchema(schemaString: string): StructType {
  const parsed = JSON.parse(schemaString) as StructType;
  if (parsed?.type !== 'struct' || !Array.isArray(parsed.fields)) {
    throw new Error(`schemaString is not a struct type: ${schemaString.slice(0, 200)}`);
  }
  return parsed;
}

/** True when a primitive type name appears anywhere in the type. */
export function usesType(type: DataType, name: string): boolean {
  if (typeof type === 'string') return type === name;
  if (type.type === 'struct') return type.fields.some((f) => usesType(f.type, name));
  if (type.type === 'array') return usesType(type.elementType, name);
  return usesType(type.keyType, name) || usesType(type.valueType, name);
}
