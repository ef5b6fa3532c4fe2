DROP TABLE health;
