import { Module } from '@nestjs/common';
import { ActivityFeedQuery } from './activity-feed.query';
import { ActivityController } from './activity.controller';

/** The organisation activity feed (read side). */
@Module({ controllers: [ActivityController], providers: [ActivityFeedQuery] })
export class ActivityModule {}
