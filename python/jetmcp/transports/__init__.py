"""The transports: Streamable HTTP (served by Granian) and stdio."""
