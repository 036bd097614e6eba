export default { dialect: 'postgresql', schema: './schema.js', out: './drizzle' };
