DROP TABLE destination_deliveries;
--bun:split
DROP TABLE destinations;
